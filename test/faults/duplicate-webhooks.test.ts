// Shopify delivers "at least once": the same webhook id can come again, even while the first
// delivery is still being stored. 20% of the webhooks here come twice, many of them racing.
import { sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';
import { account, arrivals, report, sendAll, statusCounts, formatCounts, waitForAll, type Delivery } from './support';

const UNIQUE = 400;
const REPEATED = UNIQUE / 5;

describe(`20% duplicate webhooks (${testProvider})`, () => {
  let s: Stack;
  afterAll(() => s?.close());

  it('sends every event exactly once although a fifth of the webhooks arrive twice, some at the same moment', async () => {
    s = await startStack();
    const ws = await s.connectShop(undefined, { rateLimit: 100 });
    const ids = Array.from({ length: UNIQUE }, (_, n) => `wh-dup-${n}`);
    const delivery = (n: number): Delivery => ({
      webhookId: ids[n]!,
      send: () => s.webhook('orders/create', sampleOrder(n), { webhookId: ids[n]! }),
    });
    // every fifth webhook is sent twice; half of those copies right next to the original, so
    // with 16 senders the two race through the intake together
    const list: Delivery[] = [];
    for (let n = 0; n < UNIQUE; n++) {
      list.push(delivery(n));
      if (n % 5 === 0 && n % 10 === 0) list.push(delivery(n));
    }
    for (let n = 5; n < UNIQUE; n += 10) list.splice(Math.floor((list.length * ((n * 7919) % 1000)) / 1000), 0, delivery(n));
    expect(list.length).toBe(UNIQUE + REPEATED);

    const sent = await sendAll(list, { concurrency: 16 });
    const acc = await waitForAll(s, ids, 60_000, (e) => e.workspaceId === ws.workspaceId);
    await new Promise((r) => setTimeout(r, 500)); // a late second copy would show up here
    const final = account(ids, arrivals(s.emulator.events({ workspaceId: ws.workspaceId })));
    const receipts = await s.app.db.webhookReceipt.count();
    const messages = await s.app.db.outboxMessage.count({ where: { shopId: ws.shopId } });

    report('20% duplicate webhooks', {
      'webhooks sent (with repeats)': list.length,
      'distinct webhook ids': UNIQUE,
      'answered 200': sent.accepted.length,
      'non-200 answers': JSON.stringify(sent.failures),
      'receipts stored': receipts,
      'outbox messages': messages,
      'events arrived (distinct)': final.arrived,
      missing: final.missing.length,
      'duplicate events (bound 0)': final.duplicates,
      'message states': formatCounts(await statusCounts(s, ws.shopId)),
    });
    expect(sent.gaveUp).toEqual([]);
    expect(sent.accepted).toHaveLength(list.length);
    expect(acc.missing).toEqual([]);
    expect(final.missing).toEqual([]);
    // dedupe on the webhook id at intake and (shop, source_id) in the outbox: no copy is inherent
    expect(final.duplicates).toBe(0);
    expect(receipts).toBe(UNIQUE);
    expect(messages).toBe(UNIQUE);
  }, 120_000);
});
