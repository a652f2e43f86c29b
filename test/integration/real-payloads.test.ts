// Real payloads and hostile input through the whole app, on both databases: a message the service
// accepted is never sent again (even when recording it fails), a checkout that reaches us late
// does not fire at once, and nothing the service must refuse is ever sent.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { sampleCheckout, sampleOrder } from '../../sandbox/samples';
import { TestClock } from '../helpers/clock';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';
import { queueOrders } from '../faults/support';

const quirk = (name: string) => fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'quirks', `${name}.json`), 'utf8');
const DAY = 86_400_000;

/** Makes recording a delivery (status → delivered) fail for one message, as a broken column would. */
async function failDeliveredUpdateOf(s: Stack, sourceId: string): Promise<void> {
  if (testProvider === 'postgres') {
    await s.app.db.$executeRawUnsafe(
      `CREATE OR REPLACE FUNCTION fail_delivered() RETURNS trigger AS $$ BEGIN IF NEW.status = 'delivered' AND NEW."sourceId" = '${sourceId}' THEN RAISE EXCEPTION 'value out of range (injected)'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`,
    );
    await s.app.db.$executeRawUnsafe(
      `CREATE TRIGGER fail_delivered BEFORE UPDATE ON "OutboxMessage" FOR EACH ROW EXECUTE FUNCTION fail_delivered()`,
    );
  } else {
    await s.app.db.$executeRawUnsafe(
      `CREATE TRIGGER fail_delivered BEFORE UPDATE OF "status" ON "OutboxMessage" WHEN NEW."status" = 'delivered' AND NEW."sourceId" = '${sourceId}' BEGIN SELECT RAISE(ABORT, 'value out of range (injected)'); END`,
    );
  }
}

describe(`a message the service accepted is sent once (${testProvider})`, () => {
  let s: Stack;
  beforeAll(async () => {
    // short record retries, a quick sweep: a re-send would show within the test
    s = await startStack({ server: { worker: { recordRetryMs: [50, 100], sweepEveryMs: 200 } } });
  });
  afterAll(() => s.close());

  it('delivers a message due 40 days ago exactly once, and records its latency (past 32 bits of milliseconds)', async () => {
    const ws = await s.connectShop('late.myshopify.com');
    const shop = await s.app.db.shop.findUniqueOrThrow({ where: { domain: 'late.myshopify.com' } });
    await queueOrders(s.app.db, shop, ['late-40d'], new Date(Date.now() - 40 * DAY));
    s.app.notifyQueued(shop.id);
    await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId }), 5000, 'the late order');
    // the service has it before the app records the answer: wait for the record, not a time
    const m = await s.until(
      () => s.app.db.outboxMessage.findFirst({ where: { sourceId: 'late-40d', status: 'delivered' } }),
      30_000,
      'the delivery recorded',
    );
    // a second send would come in the worker's next passes: give them time to show it
    await new Promise((r) => setTimeout(r, 1500));
    expect(s.emulator.events({ workspaceId: ws.workspaceId }).map((e) => e.event_attribute.source_id)).toEqual(['late-40d']);
    expect(Number(m.latencyMs)).toBeGreaterThan(40 * DAY - 60_000);
    expect(Number(m.latencyMs)).toBeGreaterThan(2 ** 31);
  });

  it('when recording the delivery fails, marks it delivered_unconfirmed and never sends it again', async () => {
    const ws = await s.connectShop('unrecorded.myshopify.com');
    await failDeliveredUpdateOf(s, 'unrecorded-1');
    await s.webhook('orders/create', sampleOrder(301), { domain: 'unrecorded.myshopify.com', webhookId: 'unrecorded-1' });
    const m = await s.until(
      () => s.app.db.outboxMessage.findFirst({ where: { sourceId: 'unrecorded-1', status: 'delivered_unconfirmed' } }),
      10_000,
      'delivered_unconfirmed',
    );
    expect(m.lastError).toMatch(/^The service accepted this message, but recording the delivery failed: .*injected/);
    // long enough for any lock to expire and any sweep to run
    await new Promise((r) => setTimeout(r, 3000));
    const sends = s.emulator.requests().filter((r) => r.workspaceId === ws.workspaceId && r.path.includes('/webhook/send'));
    expect(sends).toHaveLength(1);
    const metrics = await (await fetch(`${s.app.url}/metrics`)).text();
    expect(metrics).toMatch(/^connector_deliveries_unconfirmed_total 1$/m);
    expect(metrics).toMatch(/^connector_outbox_messages\{status="delivered_unconfirmed"\} 1$/m);
    const log = await s.api('GET', '/api/deliveries?status=delivered_unconfirmed', undefined, 'unrecorded.myshopify.com');
    expect(log.body.deliveries).toEqual([expect.objectContaining({ event_name: 'order_placed', status: 'delivered_unconfirmed' })]);
  });
});

describe(`a checkout that reaches us late (${testProvider})`, () => {
  let s: Stack;
  const clock = new TestClock();
  beforeAll(async () => {
    s = await startStack({ server: { now: clock.now } });
  });
  afterAll(() => s.close());

  it('three hours late, followed 5 minutes later by its order: no checkout_abandoned', async () => {
    const ws = await s.connectShop('stale.myshopify.com');
    const checkout = sampleCheckout(401, { at: new Date(clock.now().getTime() - 3 * 3_600_000) });
    await s.webhook('checkouts/create', checkout, { domain: 'stale.myshopify.com', webhookId: 'stale-checkout' });
    const abandoned = await s.app.db.outboxMessage.findFirstOrThrow({ where: { sourceId: `checkout:${checkout.token}:abandoned` } });
    // due a grace period after it arrived, not at once
    expect(abandoned.runAt.getTime() - clock.now().getTime()).toBeGreaterThan(9 * 60_000);
    clock.advance(5 * 60_000);
    await s.webhook('orders/create', sampleOrder(401, { checkoutToken: checkout.token, createdAt: clock.now() }), {
      domain: 'stale.myshopify.com',
      webhookId: 'stale-order',
    });
    clock.advance(20 * 60_000);
    await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId, eventName: 'order_placed' }), 5000, 'order_placed');
    await new Promise((r) => setTimeout(r, 600));
    expect(s.emulator.events({ workspaceId: ws.workspaceId, eventName: 'checkout_abandoned' })).toEqual([]);
  });

  it('thirty days old: no abandonment at all, and the delivery log says why', async () => {
    const ws = await s.connectShop('ancient.myshopify.com');
    const checkout = sampleCheckout(402, { at: new Date(clock.now().getTime() - 30 * DAY) });
    await s.webhook('checkouts/create', checkout, { domain: 'ancient.myshopify.com', webhookId: 'ancient-checkout' });
    clock.advance(3 * 3_600_000);
    await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId, eventName: 'checkout_started' }), 5000, 'checkout_started');
    await new Promise((r) => setTimeout(r, 600));
    expect(s.emulator.events({ workspaceId: ws.workspaceId, eventName: 'checkout_abandoned' })).toEqual([]);
    const log = await s.api('GET', '/api/deliveries?status=skipped', undefined, 'ancient.myshopify.com');
    expect(log.body.deliveries).toEqual([
      expect.objectContaining({
        event_name: 'checkout_abandoned',
        status: 'skipped',
        last_error: 'the checkout was last active 30 days before it reached us (no abandonment after 7 days)',
      }),
    ]);
  });
});

describe(`real payload shapes and hostile input over HTTP (${testProvider})`, () => {
  let s: Stack;
  let workspaceId: string;
  const SHOP = 'quirks.myshopify.com';
  const refusals = () => s.emulator.requests().filter((r) => r.status === 400);
  beforeAll(async () => {
    s = await startStack();
    ({ workspaceId } = await s.connectShop(SHOP));
  });
  afterAll(() => s.close());

  it('keeps ids beyond 2^53 exact, takes contact_email when email is empty, and reads money given as numbers', async () => {
    await s.webhook('orders/create', quirk('orders-create-rounded-ids'), { domain: SHOP, webhookId: 'q-rounded' });
    const [e] = await s.until(() => s.emulator.events({ workspaceId, eventName: 'order_placed' }), 5000, 'order_placed');
    expect(e!.email).toBe('rounded.ids@example.com');
    expect(e!.event_attribute).toMatchObject({
      order_id: '820982911946154508',
      total_price: 59.5,
      line_items: [expect.objectContaining({ product_id: '788032119674292922' })],
    });
  });

  it('decides the event by the topic, never the body: the canned test order on every order topic', async () => {
    for (const topic of ['orders/paid', 'orders/fulfilled', 'orders/cancelled'])
      await s.webhook(topic, quirk('orders-test-send'), { domain: SHOP, webhookId: `q-test-${topic}` });
    await s.until(() => s.emulator.events({ workspaceId }).length >= 4, 5000, 'the three test sends');
    expect(
      s.emulator
        .events({ workspaceId })
        .map((e) => e.event_name)
        .sort(),
    ).toEqual(['order_cancelled', 'order_fulfilled', 'order_paid', 'order_placed']);
  });

  it('sends a checkout without an id with its token as checkout_id, and refunds summed exactly', async () => {
    await s.webhook('checkouts/create', quirk('checkouts-create-no-id'), { domain: SHOP, webhookId: 'q-checkout' });
    await s.webhook('refunds/create', quirk('refunds-create-number-subtotals'), { domain: SHOP, webhookId: 'q-refund' });
    const [started] = await s.until(() => s.emulator.events({ workspaceId, eventName: 'checkout_started' }), 5000, 'checkout_started');
    expect(started!.event_attribute).toMatchObject({ checkout_id: 'c1a2b3d4e5f60718293a4b5c6d7e8f90' });
    const [refunded] = await s.until(() => s.emulator.events({ workspaceId, eventName: 'order_refunded' }), 5000, 'order_refunded');
    // the refund names an order stored earlier (the test sends reuse q-rounded's order id, and the
    // latest of them is the stored summary): its email comes from there
    expect(refunded).toMatchObject({
      email: 'jon@example.com',
      event_attribute: expect.objectContaining({ order_id: '820982911946154508', refund_amount: 34.3 }),
    });
  });

  it('records orders with no usable address as skipped, shown in the log and metrics, and never sends them', async () => {
    await s.webhook('orders/create', quirk('orders-create-no-email'), { domain: SHOP, webhookId: 'q-none' });
    await s.webhook('orders/create', quirk('orders-create-hostile-email'), { domain: SHOP, webhookId: 'q-hostile' });
    await s.webhook('orders/create', quirk('orders-create-customer-email-only'), { domain: SHOP, webhookId: 'q-customer' });
    const [fromCustomer] = await s.until(
      () => s.emulator.events({ workspaceId, email: 'only.customer@example.com' }),
      5000,
      'the customer email order',
    );
    expect(fromCustomer!.event_attribute.source_id).toBe('q-customer');
    const log = await s.api('GET', '/api/deliveries?status=skipped', undefined, SHOP);
    const orders = log.body.deliveries.filter((d: { event_name: string }) => d.event_name === 'order_placed');
    expect(orders.map((d: { last_error: string }) => d.last_error).sort()).toEqual([
      '"x@example.com\\r\\nbcc: everyone@example.org" is not a valid email address; the service would refuse it',
      'no email on the order',
    ]);
    const metrics = await (await fetch(`${s.app.url}/metrics`)).text();
    // the metric counts every skipped row (with the fixture checkout's abandonment, once it is too old)
    const skipped = await s.app.db.outboxMessage.count({ where: { status: 'skipped' } });
    expect(skipped).toBeGreaterThanOrEqual(2);
    expect(metrics).toMatch(new RegExp(`^connector_outbox_messages\\{status="skipped"\\} ${skipped}$`, 'm'));
    expect(s.emulator.events({ workspaceId }).map((e) => e.event_attribute.source_id)).not.toEqual(
      expect.arrayContaining(['q-none', 'q-hostile']),
    );
    expect(refusals()).toEqual([]);
  });

  it('never sends a request the service answers 400, whatever string the email is (fast-check)', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ maxLength: 40 }), fc.emailAddress(), fc.constantFrom('a@b', ' A@B.CO ', 'x@y.z\r\nBcc: q@r.s', 'ünï@cödé.de')),
        fc.constantFrom('orders/create', 'customers/create', 'checkouts/create'),
        async (email, topic) => {
          n += 1;
          const payload =
            topic === 'orders/create'
              ? { ...sampleOrder(5000 + n), email, contact_email: null, customer: null }
              : topic === 'customers/create'
                ? { id: 7_100_000 + n, email, created_at: new Date().toISOString() }
                : { ...sampleCheckout(5000 + n), email, customer: null };
          expect((await s.webhook(topic, payload, { domain: SHOP, webhookId: `fuzz-email-${n}` })).status).toBe(200);
        },
      ),
      { numRuns: 60 },
    );
    // let everything that was queued go out
    await s.until(
      async () =>
        (await s.app.db.outboxMessage.count({ where: { status: { in: ['queued', 'delivering'] }, runAt: { lte: new Date() } } })) === 0,
      20_000,
      'the queue drained',
    );
    expect(refusals()).toEqual([]);
  }, 60_000);
});
