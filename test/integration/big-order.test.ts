// An order with 10,000 line items (1.8 MB) goes through stage 2 in steps, with a turn of the
// event loop between them, and becomes a send-event body under the cap: line_items cut to the
// first 100 with line_items_truncated: true, item_count exact.
//
// Where stage 2 cuts its work is asserted, not how long a step takes on this machine: every step
// lets the loop turn here (a budget of 0), so each cut shows as a turn between two steps whatever
// the machine's speed. When a cut yields in production (after 20 ms of work) is
// test/unit/processing/loop-budget.test.ts's; the longest stall and the CPU between two turns
// are `npm run bench -- big-order`'s figures.
import * as parseModule from '../../src/mapping/parse';
import * as mappingModule from '../../src/mapping';
import { MAX_LINE_ITEMS } from '../../src/mapping/items';
import { ForwardStore } from '../../src/processing/forward/forward-store';
import { bigOrderBody, totalQuantity } from '../helpers/big-order';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';

jest.mock('../../src/processing/loop-budget', () => {
  const actual = jest.requireActual<typeof import('../../src/processing/loop-budget')>('../../src/processing/loop-budget');
  return {
    ...actual,
    LoopBudget: class extends actual.LoopBudget {
      constructor() {
        super(0);
      }
    },
  };
});

const DOMAIN = 'bulk-stationery.myshopify.com';
const LINES = 10_000;

type Step = 'parsed' | 'mapped' | 'written';

/**
 * Runs `work`, noting for each step of stage 2 on a huge body (its parse, its mapping, the write
 * of its messages) how many turns the event loop had made when the step happened.
 */
async function stepsDuring<T>(work: () => Promise<T>): Promise<{ value: T; steps: Array<{ step: Step; turn: number }> }> {
  let turns = 0;
  let working = true;
  const tick = () => {
    turns += 1;
    if (working) setImmediate(tick);
  };
  setImmediate(tick);
  const steps: Array<{ step: Step; turn: number }> = [];
  const realParse = parseModule.parseWebhookBody;
  const parse = jest.spyOn(parseModule, 'parseWebhookBody').mockImplementation((raw) => {
    const out = realParse(raw);
    if (raw.length > 1_000_000) steps.push({ step: 'parsed', turn: turns });
    return out;
  });
  const realMap = mappingModule.mapWebhook;
  const map = jest.spyOn(mappingModule, 'mapWebhook').mockImplementation((input) => {
    const out = realMap(input);
    if (input.topic === 'orders/create' && String(input.webhookId).startsWith('bulk')) steps.push({ step: 'mapped', turn: turns });
    return out;
  });
  const realWrite = ForwardStore.prototype.write;
  const write = jest.spyOn(ForwardStore.prototype, 'write').mockImplementation(function (this: ForwardStore, ...args) {
    steps.push({ step: 'written', turn: turns });
    return realWrite.apply(this, args);
  });
  try {
    return { value: await work(), steps };
  } finally {
    working = false;
    parse.mockRestore();
    map.mockRestore();
    write.mockRestore();
  }
}

describe(`an order with 10,000 line items (${testProvider})`, () => {
  let s: Stack;
  let workspaceId: string;
  beforeAll(async () => {
    // a web process: stage 2 runs only when the test drains it
    s = await startStack({ env: { ROLE: 'web' } });
    ({ workspaceId } = await s.connectShop(DOMAIN));
  });
  afterAll(() => s.close());

  it('is parsed, mapped and written in steps of its own, into one bounded message', async () => {
    const body = bigOrderBody(LINES, { id: '820982911946100001' });
    expect(body.length).toBeGreaterThan(1_700_000);
    const res = await s.shop.sendWebhook(s.app.url, { topic: 'orders/create', shopDomain: DOMAIN, payload: body, webhookId: 'bulk-1' });
    expect(res.status).toBe(200);

    const { value: processed, steps } = await stepsDuring(() => s.app.processor.drainAll());
    expect(processed).toBe(1);
    // the parse (one JSON.parse of 1.8 MB, the one step that cannot be cut), the mapping of the
    // first 100 items and the write: each in a turn of its own. Before, all three were one task.
    expect(steps.map((x) => x.step)).toEqual(['parsed', 'mapped', 'written']);
    expect(new Set(steps.map((x) => x.turn)).size).toBe(3);

    const message = await s.app.db.outboxMessage.findFirstOrThrow({ where: { sourceId: 'bulk-1', eventName: 'order_placed' } });
    expect(Buffer.byteLength(message.body)).toBeLessThan(40_000);
    const attributes = (JSON.parse(message.body) as { event_attribute: Record<string, unknown> }).event_attribute;
    expect(attributes.line_items).toHaveLength(MAX_LINE_ITEMS);
    expect(attributes).toMatchObject({ line_items_truncated: true, item_count: totalQuantity(LINES), order_id: '820982911946100001' });
  });

  it('several huge orders in one batch let the loop turn between them', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await s.shop.sendWebhook(s.app.url, {
        topic: 'orders/create',
        shopDomain: DOMAIN,
        payload: bigOrderBody(LINES, { id: `82098291194610010${i}` }),
        webhookId: `bulk-batch-${i}`,
      });
      expect(res.status).toBe(200);
    }
    const { value: processed, steps } = await stepsDuring(() => s.app.processor.drainAll());
    expect(processed).toBe(4);
    // each order is a unit of its own (over MAX_UNIT_BYTES), parsed, mapped and written in steps
    // of its own: twelve steps, each in its own turn of the loop, one order after the other.
    // Before, all four were parsed, mapped and written in one task.
    expect(steps.map((x) => x.step)).toEqual(Array.from({ length: 4 }, () => ['parsed', 'mapped', 'written']).flat());
    expect(new Set(steps.map((x) => x.turn)).size).toBe(12);
    expect(await s.app.db.outboxMessage.count({ where: { sourceId: { startsWith: 'bulk-batch-' }, eventName: 'order_placed' } })).toBe(4);
  });

  it('is delivered to the service as a body under the cap', async () => {
    // a worker process for the delivery: the web process above only stored and mapped
    const { startServer } = await import('../../src/app/server');
    const { testConfig } = await import('../helpers/config');
    const { createLogger } = await import('../../src/observability/logger');
    const worker = await startServer(
      testConfig(s.database.url, {
        SERVICE_BASE_URL: s.emulator.url,
        SHOPIFY_ADMIN_ORIGIN: s.shop.url,
        SHOPIFY_API_KEY: 'test-client-id',
        SHOPIFY_API_SECRET: 'test-client-secret-0123456789',
        ROLE: 'worker',
      }),
      { logger: createLogger('silent'), host: '127.0.0.1', worker: { safetyPollMs: 250 } },
    );
    try {
      const events = await s.until(
        () => s.emulator.events({ workspaceId, eventName: 'order_placed' }).filter((e) => e.event_attribute.source_id === 'bulk-1'),
        10_000,
        'the order delivered',
      );
      expect(events[0]!.event_attribute).toMatchObject({ line_items_truncated: true, item_count: totalQuantity(LINES) });
      expect((events[0]!.event_attribute.line_items as unknown[]).length).toBe(MAX_LINE_ITEMS);
    } finally {
      await worker.close();
    }
  });
});
