// Stage 2 of the storefront pixel over the whole stack (real HTTP, real database, emulator):
// stitching a visitor to the email it gives once Shopify knows it (here, the shop's customers, as
// the Admin API answers; test/integration/storefront-trust.test.ts covers the other ways and the
// forged ones), the anonymous window, collapsed views, consent, browse and cart abandonment and
// what cancels them, and GDPR.
import { randomUUID } from 'node:crypto';
import { Metrics } from '../../src/observability/metrics';
import { createLogger } from '../../src/observability/logger';
import { createStorefrontSweeper } from '../../src/processing/storefront/sweeper';
import { TestClock } from '../helpers/clock';
import { testProvider } from '../helpers/db';
import { turnsOfTheLoopDuring } from '../helpers/loop';
import { activatePixel, batch, BEANIE, ev, knownCustomer, MUG, postPixel, sendBatch, shopifyProduct, TOTE } from '../helpers/pixel';
import { tablesContaining } from '../helpers/rows';
import { startStack, type Stack } from '../helpers/stack';

const HOUR = 3_600_000;
const MIN = 60_000;

describe(`storefront events (${testProvider})`, () => {
  let s: Stack;
  const clock = new TestClock();
  let n = 0;
  beforeAll(async () => {
    s = await startStack({ server: { now: clock.now } });
  });
  afterAll(() => s.close());

  /** A fresh shop, connected, with its pixel active. */
  async function shop(): Promise<{ domain: string; key: string; workspaceId: string; shopId: string }> {
    const domain = `store-${++n}.myshopify.com`;
    const { workspaceId, shopId } = await s.connectShop(domain);
    const key = await activatePixel(s, domain);
    return { domain, key, workspaceId, shopId };
  }
  const events = (workspaceId: string, eventName?: string) => s.emulator.events({ workspaceId, eventName });
  const messages = (shopId: string, eventName: string) =>
    s.app.db.outboxMessage.findMany({ where: { shopId, eventName }, orderBy: { id: 'asc' } });
  const attrs = (m: { body: string }) => (JSON.parse(m.body) as { event_attribute: Record<string, any> }).event_attribute;

  it('keeps an anonymous visitor’s events until the contact step gives an email Shopify knows, then sends them for it, stitched, with Shopify’s product data', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    knownCustomer(s, 'jane.doe@example.com', domain);
    const client = randomUUID();
    expect(await sendBatch(s, batch(key, client, [ev.page(), ev.view(MUG)]))).toBe(204);
    expect(await sendBatch(s, batch(key, client, [ev.page(), ev.view(TOTE), ev.search('mug')]))).toBe(204);
    expect(await sendBatch(s, batch(key, client, [ev.add(TOTE)]))).toBe(204);
    // nothing is sent for an anonymous visitor; what abandonment needs waits, and no email is anywhere
    expect(await s.app.db.pixelEvent.count({ where: { shopId, clientId: client } })).toBe(3);
    expect(await s.app.db.outboxMessage.count({ where: { shopId } })).toBe(0);

    expect(await sendBatch(s, batch(key, client, [ev.contact()], { email: '  Jane.Doe@Example.com ' }))).toBe(204);
    const sent = await s.until(() => (events(workspaceId).length >= 3 ? events(workspaceId) : null), 5000, 'the stitched events');
    expect(sent.map((e) => [e.event_name, e.email]).sort()).toEqual([
      ['added_to_cart', 'jane.doe@example.com'],
      ['viewed_product', 'jane.doe@example.com'],
      ['viewed_product', 'jane.doe@example.com'],
    ]);
    const viewed = sent.filter((e) => e.event_name === 'viewed_product').map((e) => e.event_attribute);
    expect(viewed.map((a) => a.product_title).sort()).toEqual(['Aurora Mug', 'Canvas Tote']);
    expect(viewed.find((a) => a.product_id === MUG.id)).toMatchObject({
      shop_domain: expect.any(String),
      source_id: expect.stringMatching(/^pixel:viewed:/),
      ...shopifyProduct(s, MUG, domain),
      sku: 'MUG-AUR',
    });
    const added = sent.find((e) => e.event_name === 'added_to_cart')!.event_attribute;
    expect(added).toMatchObject({ product_id: '8102', quantity: 1, line_total: 24, cart_total: 24 });
    // nothing of the page's or image's query strings (they may carry personal data) is stored or sent
    expect(JSON.stringify(sent)).not.toContain('leak@example.com');
    expect(await tablesContaining(s.app.db, 'leak@example.com')).toEqual([]);
    // the waiting events went; the client id is tied to the email
    expect(await s.app.db.pixelEvent.count({ where: { shopId } })).toBe(0);
    expect(await s.app.db.pixelVisitor.findMany({ where: { shopId } })).toEqual([
      expect.objectContaining({ clientId: client, email: 'jane.doe@example.com' }),
    ]);
    // the contact step cancelled nothing that was ever stored: no abandonment rows at all
    expect(await s.app.db.outboxMessage.count({ where: { shopId, eventName: { in: ['browse_abandoned', 'cart_abandoned'] } } })).toBe(0);

    // later batches of the client id, without an email, count for it
    await sendBatch(s, batch(key, client, [ev.view(BEANIE)]));
    const later = await s.until(
      () => events(workspaceId, 'viewed_product').find((e) => e.event_attribute.product_id === BEANIE.id),
      5000,
      'a later view',
    );
    expect(later.email).toBe('jane.doe@example.com');
  });

  it('deletes what expired a chunk at a time, letting the event loop turn between chunks, and keeps the rest', async () => {
    const { shopId } = await shop();
    const now = clock.now();
    const at = (minutes: number) => new Date(now.getTime() + minutes * MIN);
    // 45 events and 25 visitors expired a minute apart (some at the same instant), 5 of each still waiting
    await s.app.db.pixelEvent.createMany({
      data: Array.from({ length: 50 }, (_, i) => ({
        shopId,
        clientId: `sweep-${i}`,
        name: 'product_viewed',
        eventId: `e-${i}`,
        occurredAt: at(-300),
        data: '{}',
        expiresAt: at(i < 45 ? -100 + Math.floor(i / 3) : 10 + i),
      })),
    });
    await s.app.db.pixelVisitor.createMany({
      data: Array.from({ length: 30 }, (_, i) => ({
        shopId,
        clientId: `sweep-${i}`,
        email: `v${i}@example.com`,
        identifiedAt: at(-300),
        expiresAt: at(i < 25 ? -100 + i : 10 + i),
      })),
    });
    const expired = {
      events: await s.app.db.pixelEvent.count({ where: { expiresAt: { lte: now } } }),
      visitors: await s.app.db.pixelVisitor.count({ where: { expiresAt: { lte: now } } }),
    };
    expect(expired.events).toBeGreaterThanOrEqual(45);
    expect(expired.visitors).toBeGreaterThanOrEqual(25);

    const sweeper = createStorefrontSweeper({
      db: s.app.db,
      logger: createLogger('silent'),
      metrics: new Metrics(),
      now: clock.now,
      chunk: 10,
    });
    const { value: swept, turns } = await turnsOfTheLoopDuring(() => sweeper.sweep());
    expect(swept).toEqual({ ...expired, pendingIdentities: 0, shoppers: 0, interests: 0 });
    expect(await s.app.db.pixelEvent.count({ where: { shopId } })).toBe(5);
    expect(await s.app.db.pixelVisitor.count({ where: { shopId } })).toBe(5);
    expect(await s.app.db.pixelEvent.count({ where: { expiresAt: { lte: now } } })).toBe(0);
    // events in chunks of 12, 12, 12 and the rest (three expire at each instant), visitors in 10, 10
    // and the rest: the loop turned after each full chunk (on SQLite it turned 0 times before)
    expect(turns).toBeGreaterThanOrEqual(5);
    // the rows still waiting would expire during the next test's sweeps
    await s.app.db.pixelEvent.deleteMany({ where: { shopId } });
    await s.app.db.pixelVisitor.deleteMany({ where: { shopId } });
  });

  it('erases an anonymous visitor’s events unsent once the window has passed; an email given later sends nothing of them', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const client = randomUUID();
    await sendBatch(s, batch(key, client, [ev.view(MUG), ev.add(MUG)]));
    expect(await s.app.db.pixelEvent.count({ where: { shopId } })).toBe(2);
    clock.advance(23 * HOUR);
    expect(await s.app.sweepStorefront()).toMatchObject({ events: 0 });
    expect(await s.app.db.pixelEvent.count({ where: { shopId } })).toBe(2);
    clock.advance(1 * HOUR + MIN);
    expect((await s.app.sweepStorefront()).events).toBeGreaterThanOrEqual(2);
    expect(await s.app.db.pixelEvent.count({ where: { shopId } })).toBe(0);

    await sendBatch(s, batch(key, client, [ev.contact()], { email: knownCustomer(s, 'late@example.com', domain) }));
    await new Promise((r) => setTimeout(r, 500));
    expect(events(workspaceId)).toEqual([]);
    expect(await s.app.db.outboxMessage.count({ where: { shopId } })).toBe(0);
    const metrics = await (await fetch(`${s.app.url}/metrics`)).text();
    expect(metrics).toMatch(/^connector_pixel_events_total\{outcome="expired"\} [1-9]\d*$/m);
  });

  it('collapses repeated views: one viewed_product per product and shopper per hour', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = knownCustomer(s, 'repeat@example.com', domain);
    const client = randomUUID();
    const t0 = clock.now();
    await sendBatch(s, batch(key, client, [ev.view(MUG, t0), ev.view(MUG, t0), ev.view(TOTE, t0)], { email }));
    await sendBatch(s, batch(key, client, [ev.view(MUG, clock.now())], { email }));
    // another device of the same shopper, in the same hour
    await sendBatch(s, batch(key, randomUUID(), [ev.view(MUG, clock.now())], { email }));
    expect((await messages(shopId, 'viewed_product')).map((m) => attrs(m).product_id).sort()).toEqual([MUG.id, TOTE.id]);
    clock.advance(HOUR);
    await sendBatch(s, batch(key, client, [ev.view(MUG, clock.now())], { email }));
    expect((await messages(shopId, 'viewed_product')).map((m) => attrs(m).product_id).sort()).toEqual([MUG.id, MUG.id, TOTE.id]);
    await s.until(() => events(workspaceId, 'viewed_product').length === 3, 5000, 'three views delivered');
    const metrics = await (await fetch(`${s.app.url}/metrics`)).text();
    expect(metrics).toMatch(/^connector_pixel_events_total\{outcome="collapsed"\} [1-9]\d*$/m);
  });

  it('sends nothing, and keeps nothing, for a visitor who does not allow marketing', async () => {
    const { key, workspaceId, shopId } = await shop();
    const client = randomUUID();
    await sendBatch(s, batch(key, client, [ev.view(MUG)]));
    expect(await s.app.db.pixelEvent.count({ where: { shopId } })).toBe(1);
    // the same visitor withdraws marketing consent: its waiting events go, and nothing is kept
    await sendBatch(s, batch(key, client, [ev.view(TOTE), ev.add(TOTE)], { marketing: false }));
    expect(await s.app.db.pixelEvent.count({ where: { shopId } })).toBe(0);
    // an identified visitor without marketing consent: nothing sent, no identity kept
    await sendBatch(s, batch(key, client, [ev.view(MUG), ev.add(MUG)], { email: 'nope@example.com', marketing: false }));
    await new Promise((r) => setTimeout(r, 400));
    expect(await s.app.db.outboxMessage.count({ where: { shopId } })).toBe(0);
    expect(await s.app.db.pixelVisitor.count({ where: { shopId } })).toBe(0);
    expect(events(workspaceId)).toEqual([]);
    const receipts = await s.app.db.webhookReceipt.findMany({
      where: { shopDomain: (await s.app.db.shop.findUniqueOrThrow({ where: { id: shopId } })).domain, kind: 'pixel' },
    });
    expect(receipts.filter((r) => r.reason === 'the visitor does not allow marketing: nothing kept')).toHaveLength(2);
    expect(receipts.every((r) => r.body === null)).toBe(true);
  });

  it('cancels an identified shopper’s pending browse and cart abandonments when their visitor withdraws marketing consent', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const browser = knownCustomer(s, 'withdraws.browsing@example.com', domain);
    const carter = knownCustomer(s, 'withdraws.cart@example.com', domain);
    const [browsing, carting] = [randomUUID(), randomUUID()];
    await sendBatch(s, batch(key, browsing, [ev.view(MUG)], { email: browser }));
    await sendBatch(s, batch(key, carting, [ev.add(TOTE)], { email: carter }));
    expect((await messages(shopId, 'browse_abandoned')).map((m) => [m.email, m.status])).toEqual([[browser, 'queued']]);
    expect((await messages(shopId, 'cart_abandoned')).map((m) => [m.email, m.status])).toEqual([[carter, 'queued']]);
    // the identified visitors come back without marketing consent (no email in these batches)
    await sendBatch(s, batch(key, browsing, [ev.page()], { marketing: false }));
    await sendBatch(s, batch(key, carting, [ev.page()], { marketing: false }));
    const cancelled = (eventName: string) => messages(shopId, eventName).then((list) => list.map((m) => [m.status, m.lastError]));
    expect(await cancelled('browse_abandoned')).toEqual([['cancelled', 'the shopper does not allow marketing']]);
    expect(await cancelled('cart_abandoned')).toEqual([['cancelled', 'the shopper does not allow marketing']]);
    expect(await s.app.db.pixelVisitor.count({ where: { shopId } })).toBe(0);
    clock.advance(2 * HOUR);
    await s.until(() => events(workspaceId, 'viewed_product').length === 1, 5000, 'the view');
    await new Promise((r) => setTimeout(r, 500));
    expect(events(workspaceId).filter((e) => e.event_name.endsWith('_abandoned'))).toEqual([]);
  });

  it('sends browse_abandoned after the delay with the products viewed', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = knownCustomer(s, 'browser@example.com', domain);
    const client = randomUUID();
    await sendBatch(s, batch(key, client, [ev.view(MUG)], { email }));
    clock.advance(10 * MIN);
    await sendBatch(s, batch(key, client, [ev.view(TOTE)], { email }));
    const [pending] = await messages(shopId, 'browse_abandoned');
    expect(pending).toMatchObject({ status: 'queued', email });
    // the latest view moves it: due 60 minutes after it
    expect(pending!.runAt.getTime() - clock.now().getTime()).toBeGreaterThan(59 * MIN);
    clock.advance(55 * MIN);
    await new Promise((r) => setTimeout(r, 500));
    expect(events(workspaceId, 'browse_abandoned')).toEqual([]);
    clock.advance(6 * MIN);
    const [sent] = await s.until(() => events(workspaceId, 'browse_abandoned'), 5000, 'browse_abandoned');
    expect(sent!.email).toBe(email);
    expect(sent!.event_attribute).toMatchObject({
      product_count: 2,
      products: [expect.objectContaining({ product_id: MUG.id }), expect.objectContaining({ product_id: TOTE.id })],
    });
    // a new browse after it was sent opens a new abandonment window
    await sendBatch(s, batch(key, client, [ev.view(BEANIE, clock.now())], { email }));
    expect((await messages(shopId, 'browse_abandoned')).map((m) => m.status)).toEqual(['delivered', 'queued']);
  });

  it('cancels a pending browse abandonment on an add to cart, and a cart abandonment on checkout_started', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = knownCustomer(s, 'cart@example.com', domain);
    const client = randomUUID();
    await sendBatch(s, batch(key, client, [ev.view(MUG)], { email }));
    expect((await messages(shopId, 'browse_abandoned')).map((m) => m.status)).toEqual(['queued']);
    await sendBatch(s, batch(key, client, [ev.add(MUG, 2)], { email }));
    expect((await messages(shopId, 'browse_abandoned')).map((m) => [m.status, m.lastError])).toEqual([
      ['cancelled', 'the shopper added to the cart'],
    ]);
    const [cart] = await messages(shopId, 'cart_abandoned');
    expect(cart).toMatchObject({ status: 'queued', email });
    expect(attrs(cart!)).toMatchObject({
      item_count: 2,
      total_price: 36,
      line_items: [expect.objectContaining({ product_id: MUG.id, quantity: 2 })],
    });
    // a second add joins the same cart; the added_to_cart event carries the cart's total so far
    await sendBatch(s, batch(key, client, [ev.add(TOTE)], { email }));
    expect((await messages(shopId, 'cart_abandoned')).map((m) => [m.status, attrs(m).total_price])).toEqual([['queued', 60]]);
    expect((await messages(shopId, 'added_to_cart')).map((m) => attrs(m).cart_total)).toEqual([36, 60]);
    // a view while the cart waits starts no browse abandonment
    await sendBatch(s, batch(key, client, [ev.view(BEANIE)], { email }));
    expect((await messages(shopId, 'browse_abandoned')).map((m) => m.status)).toEqual(['cancelled']);

    await sendBatch(s, batch(key, client, [ev.page(), ev.checkout()], { email }));
    expect((await messages(shopId, 'cart_abandoned')).map((m) => [m.status, m.lastError])).toEqual([
      ['cancelled', 'the shopper started a checkout'],
    ]);
    clock.advance(2 * HOUR);
    await s.until(() => events(workspaceId, 'viewed_product').length === 2, 5000, 'the views');
    await new Promise((r) => setTimeout(r, 500));
    expect(
      events(workspaceId)
        .map((e) => e.event_name)
        .filter((n) => n.endsWith('_abandoned')),
    ).toEqual([]);
  });

  it('cancels a pending cart abandonment when an order with the shopper’s email arrives', async () => {
    const { domain, key, shopId } = await shop();
    const order = s.fixture('orders-create');
    const email = knownCustomer(s, String(order.email).toLowerCase(), domain);
    await sendBatch(s, batch(key, randomUUID(), [ev.add(MUG)], { email }));
    expect((await messages(shopId, 'cart_abandoned')).map((m) => m.status)).toEqual(['queued']);
    await s.webhook('orders/create', { ...order, checkout_token: null }, { domain, webhookId: `order-${randomUUID()}` });
    expect((await messages(shopId, 'cart_abandoned')).map((m) => [m.status, m.lastError])).toEqual([
      ['cancelled', 'the customer placed an order'],
    ]);
  });

  it('an order in the same stage-2 batch as the add to cart cancels the cart abandonment that add starts', async () => {
    const { domain, key, shopId } = await shop();
    const order = s.fixture('orders-create');
    const email = knownCustomer(s, String(order.email).toLowerCase(), domain);
    await s.app.processor.stop();
    try {
      expect((await postPixel(s, batch(key, randomUUID(), [ev.add(MUG)], { email }))).status).toBe(204);
      await s.shop.sendWebhook(s.app.url, {
        topic: 'orders/create',
        shopDomain: domain,
        payload: { ...order, checkout_token: null },
        webhookId: `order-${randomUUID()}`,
      });
      expect((await s.app.receipts.lag(new Date())).pending).toBe(2);
    } finally {
      s.app.processor.start();
    }
    await s.settle();
    expect((await messages(shopId, 'cart_abandoned')).map((m) => [m.status, m.lastError])).toEqual([
      ['cancelled', 'the customer placed an order'],
    ]);
    expect((await messages(shopId, 'added_to_cart')).map((m) => m.status)).not.toContain('cancelled');
  });

  it('customers/redact erases the stitched visitor, its waiting events and its messages; data_request exports them first', async () => {
    const { domain, key, shopId } = await shop();
    const email = knownCustomer(s, 'forget.me@example.com', domain);
    const client = randomUUID();
    const other = randomUUID();
    await sendBatch(s, batch(key, client, [ev.view(MUG), ev.add(MUG)], { email }));
    // a second device of the customer, identified, then anonymous events of a third client stay
    await sendBatch(s, batch(key, other, [ev.view(TOTE)], { email }));
    await sendBatch(s, batch(key, randomUUID(), [ev.view(BEANIE)]));
    // a waiting event of a stitched client id (it went anonymous after its identity expired)
    await s.app.db.pixelEvent.create({
      data: {
        shopId,
        clientId: client,
        name: 'product_viewed',
        eventId: 'e-1',
        occurredAt: clock.now(),
        data: '{"product_id":"1"}',
        expiresAt: new Date(clock.now().getTime() + HOUR),
      },
    });

    await s.webhook(
      'customers/data_request',
      { shop_domain: domain, customer: { id: 424242, email }, orders_requested: [], data_request: { id: 777 } },
      { domain },
    );
    const exported = await s.app.db.dataExport.findFirstOrThrow({ where: { shopId } });
    const content = JSON.parse(exported.content);
    expect(content.storefront.visitors.map((v: { client_id: string }) => v.client_id).sort()).toEqual([client, other].sort());
    expect(content.storefront.waiting_events).toEqual([expect.objectContaining({ client_id: client, name: 'product_viewed' })]);
    expect(content.events.map((e: { event_name: string }) => e.event_name)).toEqual(
      expect.arrayContaining(['viewed_product', 'added_to_cart', 'cart_abandoned']),
    );

    await s.webhook('customers/redact', { shop_domain: domain, customer: { id: 424242, email }, orders_to_redact: [] }, { domain });
    expect(await s.app.db.pixelVisitor.count({ where: { shopId } })).toBe(0);
    expect(await s.app.db.pixelEvent.findMany({ where: { shopId } })).toEqual([
      expect.objectContaining({ data: expect.stringContaining(BEANIE.id) }),
    ]);
    // what still names the email is the contact delete at the service: it keeps the address until
    // it is sent, and the worker may send it (and scrub its row) at any moment from the commit on
    expect(await s.app.db.outboxMessage.findMany({ where: { shopId, body: { contains: email } } })).toEqual([]);
    const deletes = await s.app.db.outboxMessage.findMany({ where: { shopId, kind: 'contact_delete' } });
    expect(deletes).toHaveLength(1);
    expect([email, null]).toContain(deletes[0]!.email);
    expect((await s.app.db.outboxMessage.findMany({ where: { shopId, email } })).every((m) => m.kind === 'contact_delete')).toBe(true);
    expect((await tablesContaining(s.app.db, email)).filter((t) => t !== 'OutboxMessage')).toEqual([]);
    expect(await tablesContaining(s.app.db, client)).toEqual([]);
    expect(await tablesContaining(s.app.db, other)).toEqual([]);
  });

  it('shop/redact erases every visitor and waiting event of the shop (the Shop cascade)', async () => {
    const { domain, key, shopId } = await shop();
    await sendBatch(s, batch(key, randomUUID(), [ev.view(MUG)], { email: knownCustomer(s, 'shopper@example.com', domain) }));
    await sendBatch(s, batch(key, randomUUID(), [ev.view(TOTE)]));
    expect([await s.app.db.pixelVisitor.count({ where: { shopId } }), await s.app.db.pixelEvent.count({ where: { shopId } })]).toEqual([
      1, 1,
    ]);
    await s.webhook('shop/redact', { shop_id: 1, shop_domain: domain }, { domain });
    expect([await s.app.db.pixelVisitor.count({ where: { shopId } }), await s.app.db.pixelEvent.count({ where: { shopId } })]).toEqual([
      0, 0,
    ]);
    expect(await tablesContaining(s.app.db, 'shopper@example.com')).toEqual([]);
  });
});
