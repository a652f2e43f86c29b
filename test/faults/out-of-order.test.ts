// Shopify does not promise order: an update can arrive before the create it follows.
// Nothing may be lost either way, and the newest state must not be overwritten by an older one.
import { sampleCheckout, sampleCustomer, sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';
import { account, advanceWhenIdle, arrivals, report, sleep, testClock, waitForAll, type TestClock } from './support';

const MIN = 60_000;

describe(`out-of-order topics (${testProvider})`, () => {
  let s: Stack;
  let clock: TestClock;
  let ws: { workspaceId: string; shopId: string };
  beforeAll(async () => {
    clock = testClock();
    s = await startStack({ server: { now: clock.now } });
    ws = await s.connectShop(undefined, { rateLimit: 50 });
  }, 30_000);
  afterAll(() => s?.close());

  const sourceIds = (eventName: string, filter: (a: Record<string, unknown>) => boolean = () => true) =>
    s.emulator
      .events({ workspaceId: ws.workspaceId, eventName })
      .filter((e) => filter(e.event_attribute))
      .map((e) => String(e.event_attribute.source_id));

  /** One customer, one order and one checkout, each as a create and an update a minute later. */
  function scenario(n: number) {
    const customer = sampleCustomer(n);
    const customerLater = { ...customer, first_name: 'Renamed', updated_at: new Date(Date.parse(customer.updated_at) + MIN).toISOString() };
    const order = sampleOrder(n + 1);
    const paid = { ...order, updated_at: new Date(Date.parse(order.updated_at) + MIN).toISOString() };
    const at = new Date(clock.now().getTime() - 10 * MIN);
    const checkout = sampleCheckout(n + 2, { at });
    const checkoutLater = { ...sampleCheckout(n + 2, { at: new Date(at.getTime() + 5 * MIN) }), created_at: checkout.created_at };
    const p = `ooo-${n}`;
    const inOrder: Array<[string, unknown, string]> = [
      ['customers/create', customer, `${p}-cust-new`],
      ['customers/update', customerLater, `${p}-cust-upd`],
      ['orders/create', order, `${p}-order-new`],
      ['orders/paid', paid, `${p}-order-paid`],
      ['checkouts/create', checkout, `${p}-co-new`],
      ['checkouts/update', checkoutLater, `${p}-co-upd`],
    ];
    const reversed = [inOrder[1]!, inOrder[0]!, inOrder[3]!, inOrder[2]!, inOrder[5]!, inOrder[4]!];
    const expected = [
      `${p}-cust-new`,
      `${p}-cust-upd`,
      `${p}-order-new`,
      `${p}-order-paid`,
      `checkout:${checkout.token}:started`,
      `checkout:${checkout.token}:abandoned`,
    ];
    const emails = new Set([customer.email, order.email, checkout.email]);
    return { inOrder, reversed, expected, emails };
  }

  async function play(sends: Array<[string, unknown, string]>) {
    for (const [topic, payload, id] of sends) expect((await s.webhook(topic, payload, { webhookId: id })).status).toBe(200);
  }

  const namesFor = (emails: Set<string>) =>
    s.emulator
      .events({ workspaceId: ws.workspaceId })
      .filter((e) => emails.has(e.email))
      .map((e) => e.event_name)
      .sort();

  it('loses nothing when customers/update, orders/paid and checkouts/update come before their create', async () => {
    const ooo = scenario(100);
    await play(ooo.reversed);
    const live = ooo.expected.slice(0, 5);
    const acc = await waitForAll(s, live, 15_000, (e) => e.workspaceId === ws.workspaceId);
    // the abandonment is due 60 min after the checkout's last activity: move the clock past it
    await advanceWhenIdle(s.app.db, clock, 60 * MIN);
    const acc2 = await waitForAll(s, ooo.expected, 15_000, (e) => e.workspaceId === ws.workspaceId);
    await sleep(300);
    const final = account(ooo.expected, arrivals(s.emulator.events({ workspaceId: ws.workspaceId })));
    report('out-of-order topics: nothing lost', {
      'webhooks sent (update before create, x3)': ooo.reversed.length,
      'events expected (by source_id)': final.expected,
      'events arrived': final.arrived,
      missing: final.missing.join(',') || 0,
      'duplicates of a source_id (bound 0)': final.duplicates,
      'event names': namesFor(ooo.emails).join(' '),
    });
    expect(acc.missing).toEqual([]);
    expect(acc2.missing).toEqual([]);
    expect(final.missing).toEqual([]);
    expect(final.duplicates).toBe(0);
  }, 60_000);

  // Regression (fixed in src/mapping/customers.ts): a customers/create that arrives after the customer's
  // update announces email_subscribed a second time (the update already did, under another
  // source_id, so the service cannot dedupe it).
  it('sends the same events out of order as in order (no consent event twice)', async () => {
    const a = scenario(400);
    const b = scenario(500);
    await play(a.inOrder);
    await play(b.reversed);
    await advanceWhenIdle(s.app.db, clock, 60 * MIN);
    await waitForAll(s, [...a.expected, ...b.expected], 15_000, (e) => e.workspaceId === ws.workspaceId);
    await sleep(300);
    const inOrder = namesFor(a.emails);
    const reversed = namesFor(b.emails);
    report('out-of-order topics: same events as in order', { 'in order': inOrder.join(' '), 'update first': reversed.join(' ') });
    expect(reversed).toEqual(inOrder);
  }, 60_000);

  // Regression (fixed in src/admin/ingest-webhook.ts): a late checkouts/create overwrites the queued
  // checkout_abandoned with its older cart and pulls its due time back.
  it('keeps the abandonment at the newest activity when checkouts/create arrives after checkouts/update', async () => {
    const base = clock.now();
    const created = new Date(base.getTime() - 20 * MIN);
    const updated = new Date(base.getTime() - 5 * MIN);
    const first = sampleCheckout(201, { at: created });
    // the update adds an item: the abandoned event must carry the newer cart
    const later = {
      ...sampleCheckout(201, { at: updated }),
      created_at: first.created_at,
      line_items: [...first.line_items, { ...first.line_items[0]!, sku: 'SKU-NEW', title: 'Added later' }],
    };
    expect((await s.webhook('checkouts/update', later, { webhookId: 'ooo2-co-upd' })).status).toBe(200);
    expect((await s.webhook('checkouts/create', first, { webhookId: 'ooo2-co-new' })).status).toBe(200);
    const abandoned = `checkout:${first.token}:abandoned`;
    const row = await s.app.db.outboxMessage.findUniqueOrThrow({ where: { shopId_sourceId: { shopId: ws.shopId, sourceId: abandoned } } });

    // 60 min after the create (40 min from now) the newer activity still keeps it back
    await advanceWhenIdle(s.app.db, clock, 42 * MIN);
    await sleep(1000);
    const early = sourceIds('checkout_abandoned').filter((id) => id === abandoned).length;
    await advanceWhenIdle(s.app.db, clock, 20 * MIN);
    await waitForAll(s, [abandoned], 10_000);
    const sent = s.emulator
      .events({ workspaceId: ws.workspaceId, eventName: 'checkout_abandoned' })
      .filter((e) => e.event_attribute.source_id === abandoned);
    report('late checkouts/create', {
      'abandonment due (stored)': row.runAt.toISOString(),
      'due after newest activity': new Date(updated.getTime() + 60 * MIN).toISOString(),
      'sent before it was due': early,
      'abandoned events': sent.length,
      'items in abandoned event': String(sent[0]?.event_attribute.item_count),
    });
    expect(row.runAt.toISOString()).toBe(new Date(updated.getTime() + 60 * MIN).toISOString());
    expect(early).toBe(0);
    expect(sent).toHaveLength(1);
    expect((sent[0]!.event_attribute.line_items as unknown[]).length).toBe(later.line_items.length);
  }, 60_000);

  // Regression (fixed in src/mapping/customers.ts): a late customers/create sends its older contact properties
  // after the update's, so the contact at the service ends with stale values.
  it('leaves the newest customer properties on the contact when customers/create arrives after customers/update', async () => {
    const customer = sampleCustomer(301);
    const renamed = { ...customer, first_name: 'Newname', updated_at: new Date(Date.parse(customer.updated_at) + 10 * MIN).toISOString() };
    expect((await s.webhook('customers/update', renamed, { webhookId: 'ooo3-upd' })).status).toBe(200);
    expect((await s.webhook('customers/create', customer, { webhookId: 'ooo3-new' })).status).toBe(200);
    await waitForAll(s, ['ooo3-upd', 'ooo3-new'], 10_000);
    const contact = s.emulator.contacts(ws.workspaceId).find((c) => c.email === customer.email);
    report('late customers/create', {
      'first_name in the create': customer.first_name,
      'first_name in the newer update': renamed.first_name,
      'first_name on the contact at the service': String(contact?.properties.first_name),
    });
    expect(contact?.properties.first_name).toBe('Newname');
  }, 30_000);
});
