// A deep backlog (the service down for hours, a big import) must not slow down what keeps the
// app alive: the intake (Shopify gives up on a webhook after 5 s and retries it) and the
// worker's claim. Each is timed shallow and again behind 100,000 queued messages of one shop;
// the ratio is what is asserted, so a busy machine slows both sides alike.
import { performance } from 'node:perf_hooks';
import { OutboxRepository } from '../../src/outbox/repository';
import { sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';
import { queueOrders, report } from './support';

const DEPTH = 100_000;
const SAMPLES = 30;
const MAX_RATIO = 2;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * The deep side's median, measured again (up to three times in all) while it is over the bound:
 * a slowdown the backlog causes (a scan of the queue) shows in every try, while another test
 * file starting beside this one on a 2-core machine slows one try (CI once measured 22.5 ms
 * against 5.3 ms shallow). Every try is reported.
 */
async function deepMedian(measure: () => Promise<number>, bound: number): Promise<{ best: number; tries: number[] }> {
  const tries: number[] = [];
  while (tries.length < 3) {
    tries.push(await measure());
    if (tries[tries.length - 1]! < bound) break;
  }
  return { best: Math.min(...tries), tries };
}

/**
 * Adds `count` queued copies of the shop's first message, each with its own source id and
 * email, in one INSERT ... SELECT (seconds, where createMany would take half a minute).
 */
async function cloneQueued(s: Stack, count: number): Promise<void> {
  const template = await s.app.db.outboxMessage.findFirstOrThrow({ orderBy: { id: 'asc' }, select: { id: true } });
  const cols = [
    'shopId',
    'kind',
    'topic',
    'eventName',
    'deliveryClass',
    'customerId',
    'checkoutToken',
    'orderId',
    'body',
    'status',
    'runAt',
    'dueAt',
    'createdAt',
    'updatedAt',
  ];
  const list = cols.map((c) => `"${c}"`).join(', ');
  await s.app.db.$executeRawUnsafe(`
    INSERT INTO "OutboxMessage" ("sourceId", "email", ${list})
    WITH RECURSIVE n(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM n WHERE g < ${Number(count)})
    SELECT 'clone-' || CAST(n.g AS TEXT), 'clone-' || CAST(n.g AS TEXT) || '@example.com', ${cols.map((c) => `t."${c}"`).join(', ')}
    FROM n, "OutboxMessage" t WHERE t."id" = ${Number(template.id)}`);
  expect(await s.app.db.outboxMessage.count({ where: { status: 'queued' } })).toBeGreaterThanOrEqual(count);
}

describe(`a deep backlog (${testProvider})`, () => {
  let s: Stack;
  let shop: { id: string; domain: string };
  const shallow = { intake: 0, claim: 0 };
  let n = 0;

  /**
   * Median time of one orders/create from POST /webhooks to processed by stage 2 (where it
   * cancels pending abandoned checkouts), a new webhook each time, sequentially.
   */
  async function intakeMs(): Promise<number> {
    const times: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const t = performance.now();
      const res = await s.shop.sendWebhook(s.app.url, {
        topic: 'orders/create',
        shopDomain: shop.domain,
        payload: sampleOrder(500_000 + n),
        webhookId: `deep-${n++}`,
      });
      expect(await s.app.processor.drainAll()).toBe(1);
      times.push(performance.now() - t);
      expect(res.status).toBe(200);
    }
    return median(times);
  }

  /** Median time of the worker's claim (3 messages, given back each time). */
  async function claimMs(): Promise<number> {
    const repo = new OutboxRepository(s.app.db, s.database.provider);
    const times: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const t = performance.now();
      const batch = await repo.claim(shop.id, 'deep-test', [3, 0, 0, 0], new Date(), 30_000);
      times.push(performance.now() - t);
      expect(batch).toHaveLength(3);
      await repo.release(
        batch.map((m) => m.id),
        'deep-test',
      );
    }
    return median(times);
  }

  beforeAll(async () => {
    // delivery and stage 2 are off (stage 2 is run by hand): the queue stays as deep as it is made
    s = await startStack({ env: { ROLE: 'web' } });
    const ws = await s.connectShop();
    shop = { id: ws.shopId, domain: 'demo-store.myshopify.com' };
    await queueOrders(
      s.app.db,
      shop,
      Array.from({ length: 100 }, (_, i) => `shallow-${i}`),
    );
    shallow.intake = await intakeMs();
    shallow.claim = await claimMs();
    await cloneQueued(s, DEPTH);
  }, 120_000);
  afterAll(() => s?.close());

  // Regression on SQLite (fixed in the intake's cancellation + an index): every orders/create
  // cancels pending checkout_abandoned messages, and one UPDATE with an OR made SQLite scan all
  // of the shop's queued messages inside the write transaction (now in stage 2, src/processing/forward/forward-store.ts).
  it('keeps the intake about as fast behind 100,000 queued messages', async () => {
    const { best: deep, tries } = await deepMedian(intakeMs, shallow.intake * MAX_RATIO);
    report('deep backlog: intake', {
      'median POST /webhooks, 100 queued (ms)': shallow.intake.toFixed(1),
      [`median POST /webhooks, ${DEPTH} queued (ms)`]: tries.map((t) => t.toFixed(1)).join(', '),
      ratio: (deep / shallow.intake).toFixed(1),
    });
    expect(deep / shallow.intake).toBeLessThan(MAX_RATIO);
  }, 120_000);

  // Regression on PostgreSQL (fixed by an index): the claim orders by (lane, runAt, id) and
  // its index stops at runAt, so PostgreSQL sorts every due message of the shop for each claim.
  it('keeps the claim about as fast behind 100,000 queued messages', async () => {
    const floor = Math.max(shallow.claim, 0.5);
    const { best: deep, tries } = await deepMedian(claimMs, floor * MAX_RATIO);
    report('deep backlog: claim', {
      'median claim, 100 queued (ms)': shallow.claim.toFixed(2),
      [`median claim, ${DEPTH} queued (ms)`]: tries.map((t) => t.toFixed(2)).join(', '),
      ratio: (deep / shallow.claim).toFixed(1),
    });
    expect(deep / floor).toBeLessThan(MAX_RATIO);
  }, 60_000);
});
