// Issue 36 over the whole stack (real HTTP, real database, the simulated shop and the emulator):
// the pixel key is public, so an email from the browser is only a claim until Shopify vouches for
// it, and what an event says about a product is Shopify's. Forged emails are never sent to, forged
// titles never reach the service; a customers webhook, an Admin API lookup and a checkout webhook
// (before or after the pixel's batch, or in the same stage-2 batch) each stitch the visitor's
// earlier events; unknown products are dropped; the per-email and per-IP limits hold.
import { randomUUID } from 'node:crypto';
import { HoldableClock, TestClock } from '../helpers/clock';
import { testProvider } from '../helpers/db';
import { activatePixel, batch, ev, knownCustomer, MUG, postPixel, sendBatch, shopifyProduct, TOTE, type Product } from '../helpers/pixel';
import { tablesContaining } from '../helpers/rows';
import { startStack, type Stack } from '../helpers/stack';

const MIN = 60_000;
const HOUR = 3_600_000;
const FORGED = 'Cheap pills at evil.example';

/** An add to cart as a hostile sender writes it: a real product id, its own title, price and links. */
function forgedAdd(p: Product) {
  const e = ev.add(p, 3);
  const merchandise = e.data.cartLine.merchandise;
  return {
    ...e,
    data: {
      cartLine: {
        ...e.data.cartLine,
        cost: { totalAmount: { amount: 0.01, currencyCode: 'XXX' } },
        merchandise: {
          ...merchandise,
          title: FORGED,
          sku: FORGED,
          price: { amount: 0.01, currencyCode: 'XXX' },
          image: { src: 'https://evil.example/pills.png' },
          product: { ...merchandise.product, title: FORGED, url: 'https://evil.example/buy' },
        },
      },
    },
  };
}

describe(`storefront trust (${testProvider})`, () => {
  let s: Stack;
  const clock = new TestClock();
  let n = 0;
  beforeAll(async () => {
    s = await startStack({
      server: { now: clock.now },
      env: { PIXEL_EVENTS_PER_EMAIL_DAY: '5', PIXEL_ABANDONMENTS_PER_EMAIL_DAY: '1', PIXEL_LOOKUPS_PER_MINUTE: '4' },
    });
  });
  afterAll(() => s.close());

  async function shop(): Promise<{ domain: string; key: string; workspaceId: string; shopId: string }> {
    const domain = `trust-${++n}.myshopify.com`;
    const { workspaceId, shopId } = await s.connectShop(domain);
    const key = await activatePixel(s, domain);
    return { domain, key, workspaceId, shopId };
  }
  const events = (workspaceId: string, eventName?: string) => s.emulator.events({ workspaceId, eventName });
  const storefrontEvents = (workspaceId: string) =>
    events(workspaceId).filter((e) => ['viewed_product', 'added_to_cart'].includes(e.event_name));
  const metrics = async () => (await fetch(`${s.app.url}/metrics`)).text();
  const metric = (text: string, name: string) =>
    Number(new RegExp(`^${name.replace(/[{}]/g, (c) => `\\${c}`)} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  let customerId = 99_100;
  /** A customer Shopify signed a customers/create webhook for: it vouches for the email. */
  const customerWebhook = (domain: string, email: string) =>
    s.webhook('customers/create', { ...s.fixture('customers-create'), id: ++customerId, email }, { domain });
  /** A checkout Shopify signed, naming `email` (as checkouts/create and checkouts/update do). */
  const checkout = (email: string) => ({
    ...s.fixture('checkouts-update'),
    id: Math.floor(Math.random() * 1e9),
    token: `t-${randomUUID()}`,
    email,
    customer: null,
    completed_at: null,
    updated_at: clock.now().toISOString(),
  });

  it('never sends to a forged email: the claim waits unvouched, then expires with the visitor’s events, unsent', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const victim = 'victim@example.org';
    const client = randomUUID();
    const before = await metrics();
    // the request: someone else's address, an add to cart with a title of the sender's choosing
    expect(await sendBatch(s, batch(key, client, [ev.view(MUG), forgedAdd(MUG)], { email: victim }))).toBe(204);
    expect(await s.app.db.outboxMessage.count({ where: { shopId } })).toBe(0);
    expect(await s.app.db.pixelVisitor.count({ where: { shopId } })).toBe(0);
    // the same claim again from another client id: the Admin API is not asked twice (its "no" is cached)
    await sendBatch(s, batch(key, randomUUID(), [ev.view(TOTE)], { email: victim }));
    expect(s.shop.customerQueries(domain)).toBe(1);
    await new Promise((r) => setTimeout(r, 400));
    expect(events(workspaceId)).toEqual([]);
    expect(await s.app.db.outboxMessage.count({ where: { shopId } })).toBe(0);
    expect(await s.app.db.pixelVisitor.count({ where: { shopId } })).toBe(0);
    expect(await s.app.db.pixelClaim.count({ where: { shopId } })).toBe(2);
    expect(await s.app.db.pixelShopper.findMany({ where: { shopId }, select: { state: true, source: true } })).toEqual([
      { state: 'unknown', source: 'admin_api' },
    ]);
    // nothing holds the address: claims and trust rows keep a keyed hash of it
    expect(await tablesContaining(s.app.db, victim)).toEqual([]);
    expect(await tablesContaining(s.app.db, 'evil.example')).toEqual([]);
    const during = await metrics();
    expect(
      metric(during, 'connector_pixel_claims_total{outcome="pending"}') - metric(before, 'connector_pixel_claims_total{outcome="pending"}'),
    ).toBe(2);
    // connector_pixel_claims_pending is a cached gauge (up to 15 s old: metrics-gauges.test.ts); the page's count is live
    expect((await s.api('GET', '/api/pixel', undefined, domain)).body.activity).toMatchObject({ claims_pending: 2, claims_vouched: 0 });

    // PENDING_IDENTITY_MS (30 min) later: the claims go, counted; the events wait out their own window
    clock.advance(31 * MIN);
    expect(await s.app.sweepStorefront()).toMatchObject({ pendingIdentities: 2 });
    expect(await s.app.db.pixelClaim.count({ where: { shopId } })).toBe(0);
    expect((await s.api('GET', '/api/pixel', undefined, domain)).body.activity).toMatchObject({
      claims_pending: 0,
      claims_expired: 2,
      claims_vouched: 0,
    });
    clock.advance(24 * HOUR);
    await s.app.sweepStorefront();
    expect(await s.app.db.pixelEvent.count({ where: { shopId } })).toBe(0);
    // Shopify naming the email now changes nothing: there is nothing left to send
    await customerWebhook(domain, victim);
    await new Promise((r) => setTimeout(r, 300));
    expect(storefrontEvents(workspaceId)).toEqual([]);
    const after = await metrics();
    expect(
      metric(after, 'connector_pixel_claims_total{outcome="expired"}') - metric(before, 'connector_pixel_claims_total{outcome="expired"}'),
    ).toBe(2);
  });

  it('never lets a forged title, price or link reach the service: they are Shopify’s', async () => {
    const { domain, key, workspaceId } = await shop();
    const email = 'real.customer@example.com';
    await customerWebhook(domain, email);
    await sendBatch(s, batch(key, randomUUID(), [forgedAdd(MUG)], { email }));
    const [added] = await s.until(() => events(workspaceId, 'added_to_cart'), 5000, 'added_to_cart');
    expect(added!.event_attribute).toMatchObject({ ...shopifyProduct(s, MUG, domain), quantity: 3, line_total: 54, cart_total: 54 });
    const cart = await s.app.db.outboxMessage.findFirstOrThrow({ where: { email, eventName: 'cart_abandoned' } });
    expect(JSON.parse(cart.body).event_attribute).toMatchObject({
      total_price: 54,
      currency: 'USD',
      line_items: [expect.objectContaining({ product_title: 'Aurora Mug', price: 18 })],
    });
    expect(JSON.stringify(s.emulator.events({}))).not.toMatch(/evil\.example|Cheap pills|0\.01|XXX/);
    expect(await tablesContaining(s.app.db, 'evil.example')).toEqual([]);
  });

  it('a customers webhook before the claim vouches for the email: the visitor’s earlier events are stitched', async () => {
    const { domain, key, workspaceId } = await shop();
    const email = 'new.customer@example.com';
    const client = randomUUID();
    await sendBatch(s, batch(key, client, [ev.view(MUG), ev.add(TOTE)]));
    await customerWebhook(domain, 'New.Customer@Example.com');
    await sendBatch(s, batch(key, client, [ev.page()], { email }));
    const sent = await s.until(
      () => (storefrontEvents(workspaceId).length >= 2 ? storefrontEvents(workspaceId) : null),
      5000,
      'the stitched events',
    );
    expect(sent.map((e) => [e.event_name, e.email, e.event_attribute.product_title]).sort()).toEqual([
      ['added_to_cart', email, 'Canvas Tote'],
      ['viewed_product', email, 'Aurora Mug'],
    ]);
    // no Admin API call was needed: the webhook had vouched
    expect(s.shop.customerQueries(domain)).toBe(0);
  });

  it('an Admin API lookup vouches for a customer of the shop (cached: asked once), and stitches the earlier events', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = knownCustomer(s, 'looked.up@example.com', domain);
    const client = randomUUID();
    await sendBatch(s, batch(key, client, [ev.view(TOTE)]));
    await sendBatch(s, batch(key, client, [ev.add(MUG)], { email: 'Looked.Up@example.com' }));
    const sent = await s.until(
      () => (storefrontEvents(workspaceId).length >= 2 ? storefrontEvents(workspaceId) : null),
      5000,
      'the stitched events',
    );
    expect(sent.map((e) => [e.event_name, e.email]).sort()).toEqual([
      ['added_to_cart', email],
      ['viewed_product', email],
    ]);
    expect(await s.app.db.pixelShopper.findMany({ where: { shopId }, select: { state: true, source: true } })).toEqual([
      { state: 'vouched', source: 'admin_api' },
    ]);
    // another device of the same customer: the vouch is cached, Shopify is not asked again
    await sendBatch(s, batch(key, randomUUID(), [ev.view(MUG)], { email }));
    expect(s.shop.customerQueries(domain)).toBe(1);
  });

  it('a checkout webhook after the pixel’s batch applies the pending claim: the visitor’s events are stitched then', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = 'guest.after@example.com';
    const client = randomUUID();
    await sendBatch(s, batch(key, client, [ev.view(MUG), ev.add(MUG)]));
    await sendBatch(s, batch(key, client, [ev.contact()], { email }));
    await new Promise((r) => setTimeout(r, 300));
    expect(storefrontEvents(workspaceId)).toEqual([]);
    expect(await s.app.db.pixelClaim.count({ where: { shopId } })).toBe(1);
    await s.webhook('checkouts/update', checkout(email), { domain });
    const sent = await s.until(
      () => (storefrontEvents(workspaceId).length >= 2 ? storefrontEvents(workspaceId) : null),
      5000,
      'the stitched events',
    );
    expect(sent.map((e) => [e.event_name, e.email]).sort()).toEqual([
      ['added_to_cart', email],
      ['viewed_product', email],
    ]);
    expect(await s.app.db.pixelClaim.count({ where: { shopId } })).toBe(0);
    expect(await s.app.db.pixelVisitor.findMany({ where: { shopId }, select: { clientId: true, email: true } })).toEqual([
      { clientId: client, email },
    ]);
    expect(await s.app.db.pixelShopper.findMany({ where: { shopId }, select: { state: true, source: true } })).toEqual([
      { state: 'vouched', source: 'checkout' },
    ]);
    // later batches of the client id count for the vouched email
    await sendBatch(s, batch(key, client, [ev.view(TOTE)]));
    await s.until(
      () => events(workspaceId, 'viewed_product').find((e) => e.event_attribute.product_id === TOTE.id && e.email === email),
      5000,
      'a later view',
    );
    expect((await s.api('GET', '/api/pixel', undefined, domain)).body.activity).toMatchObject({ claims_pending: 0, claims_vouched: 1 });
  });

  it('a checkout webhook before the pixel’s batch vouches for the email the contact step then gives', async () => {
    const { domain, key, workspaceId } = await shop();
    const email = 'guest.before@example.com';
    const client = randomUUID();
    await sendBatch(s, batch(key, client, [ev.view(TOTE)]));
    await s.webhook('checkouts/create', checkout(email), { domain });
    await sendBatch(s, batch(key, client, [ev.contact()], { email }));
    const [viewed] = await s.until(() => events(workspaceId, 'viewed_product'), 5000, 'the stitched view');
    expect([viewed!.email, viewed!.event_attribute.product_title]).toEqual([email, 'Canvas Tote']);
    expect(s.shop.customerQueries(domain)).toBe(0);
  });

  it('in one stage-2 batch, the shop’s arrival order holds: a claim, then the checkout naming it; a checkout, then a claim', async () => {
    const { domain, key, workspaceId } = await shop();
    const [first, second] = ['same.batch.1@example.com', 'same.batch.2@example.com'];
    const [a, b] = [randomUUID(), randomUUID()];
    await sendBatch(s, batch(key, a, [ev.view(MUG)]));
    await sendBatch(s, batch(key, b, [ev.view(TOTE)]));
    await s.app.processor.stop();
    try {
      expect((await postPixel(s, batch(key, a, [ev.contact()], { email: first }))).status).toBe(204);
      await s.shop.sendWebhook(s.app.url, { topic: 'checkouts/update', shopDomain: domain, payload: checkout(first) });
      await s.shop.sendWebhook(s.app.url, { topic: 'checkouts/update', shopDomain: domain, payload: checkout(second) });
      expect((await postPixel(s, batch(key, b, [ev.contact()], { email: second }))).status).toBe(204);
      expect((await s.app.receipts.lag(new Date())).pending).toBe(4);
    } finally {
      s.app.processor.start();
    }
    await s.settle();
    const sent = await s.until(
      () => (events(workspaceId, 'viewed_product').length >= 2 ? events(workspaceId, 'viewed_product') : null),
      5000,
      'both stitched views',
    );
    expect(sent.map((e) => [e.email, e.event_attribute.product_id]).sort()).toEqual([
      [first, MUG.id],
      [second, TOTE.id],
    ]);
    // nothing needed the Admin API: the batch's own webhooks vouched
    expect(s.shop.customerQueries(domain)).toBe(0);
  });

  it('a lookup that times out leaves the claim pending, never vouched; a later signed source still applies it', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = knownCustomer(s, 'slow.lookup@example.com', domain);
    s.shop.addGraphqlHandler(async (req) => {
      if (req.shop.domain === domain && /\bcustomers\s*\(/.test(req.query)) await new Promise((r) => setTimeout(r, 3_000));
      return undefined;
    });
    const client = randomUUID();
    await sendBatch(s, batch(key, client, [ev.view(MUG)], { email }));
    expect(await s.app.db.pixelClaim.count({ where: { shopId } })).toBe(1);
    expect(await s.app.db.pixelShopper.count({ where: { shopId } })).toBe(0);
    expect(await s.app.db.pixelVisitor.count({ where: { shopId } })).toBe(0);
    await new Promise((r) => setTimeout(r, 1_500)); // the fake shop answers late: nothing is learned from it
    expect(await s.app.db.pixelShopper.count({ where: { shopId } })).toBe(0);
    expect(events(workspaceId)).toEqual([]);
    await s.webhook(
      'orders/create',
      { ...s.fixture('orders-create'), id: 99003, email, contact_email: email, customer: null, checkout_token: null },
      { domain, webhookId: `order-${randomUUID()}` },
    );
    const [viewed] = await s.until(() => events(workspaceId, 'viewed_product'), 5000, 'the view, once the order vouched');
    expect(viewed!.email).toBe(email);
  }, 30_000);

  it('asks the Admin API at most its lookups a minute (4 here) per shop, however many emails are claimed', async () => {
    const { domain, key, shopId } = await shop();
    for (let i = 0; i < 7; i++) await sendBatch(s, batch(key, randomUUID(), [ev.view(MUG)], { email: `random.${i}@example.net` }));
    expect(s.shop.customerQueries(domain)).toBe(4);
    // the claims beyond the budget wait, unanswered rather than refused
    expect(await s.app.db.pixelClaim.count({ where: { shopId } })).toBe(7);
    expect(await s.app.db.pixelShopper.count({ where: { shopId, state: 'unknown' } })).toBe(4);
  });

  it('drops views and adds of products and variants the shop does not have, and counts them', async () => {
    const { domain, key, workspaceId } = await shop();
    const email = 'dropped.products@example.com';
    await customerWebhook(domain, email);
    const before = await metrics();
    const ghost: Product = { id: '999999001', title: 'Ghost', variantId: '999999002', price: 1 };
    const mixed: Product = { ...MUG, variantId: TOTE.variantId }; // the Tote's variant, named as the Mug's
    const bad: Product = { ...MUG, id: 'not-a-product-id' };
    await sendBatch(s, batch(key, randomUUID(), [ev.view(ghost), ev.add(ghost), ev.view(mixed), ev.view(bad), ev.view(TOTE)], { email }));
    const [viewed] = await s.until(() => events(workspaceId, 'viewed_product'), 5000, 'the real view');
    await new Promise((r) => setTimeout(r, 300));
    expect(storefrontEvents(workspaceId).map((e) => e.event_attribute.product_id)).toEqual([TOTE.id]);
    expect(viewed!.event_attribute.product_title).toBe('Canvas Tote');
    const after = await metrics();
    expect(
      metric(after, 'connector_pixel_products_dropped_total{reason="unknown"}') -
        metric(before, 'connector_pixel_products_dropped_total{reason="unknown"}'),
    ).toBe(4);
    expect(metric(after, 'connector_pixel_admin_api_calls_total{kind="products"}')).toBeGreaterThan(0);
    expect((await s.api('GET', '/api/pixel', undefined, domain)).body.activity).toMatchObject({ products_dropped: 4 });
    // an unknown id is remembered, not written: no row of it
    expect(await s.app.db.productInfo.count({ where: { productId: ghost.id } })).toBe(0);
  });

  it('holds each email to its daily events and abandonments, across client ids, until the next UTC day', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = 'busy.shopper@example.com';
    await customerWebhook(domain, email);
    // 8 adds from two devices: 5 added_to_cart a day (the default this stack sets), one cart abandonment
    await sendBatch(s, batch(key, randomUUID(), [ev.add(MUG), ev.add(TOTE), ev.add(MUG), ev.add(TOTE)], { email }));
    await sendBatch(s, batch(key, randomUUID(), [ev.add(MUG), ev.add(TOTE), ev.add(MUG), ev.add(TOTE)], { email }));
    expect(await s.app.db.outboxMessage.count({ where: { shopId, eventName: 'added_to_cart' } })).toBe(5);
    expect(await s.app.db.outboxMessage.count({ where: { shopId, eventName: 'cart_abandoned' } })).toBe(1);
    // a checkout ends that cart; the next cart would be a second abandonment of the day (1 a day here)
    const c = randomUUID();
    await sendBatch(s, batch(key, c, [ev.checkout()], { email }));
    await sendBatch(s, batch(key, c, [ev.add(MUG)], { email }));
    expect(await s.app.db.outboxMessage.count({ where: { shopId, eventName: 'cart_abandoned' } })).toBe(1);
    expect((await s.api('GET', '/api/pixel', undefined, domain)).body.activity.events_limited).toBe(5);
    const metricsText = await metrics();
    expect(metric(metricsText, 'connector_pixel_events_total{outcome="limited"}')).toBeGreaterThanOrEqual(5);
    // the next UTC day, the email has its limits again
    const now = clock.now().getTime();
    clock.advance(86_400_000 - (now % 86_400_000) + MIN);
    await sendBatch(s, batch(key, c, [ev.add(TOTE)], { email }));
    expect(await s.app.db.outboxMessage.count({ where: { shopId, eventName: 'added_to_cart' } })).toBe(6);
    expect(await s.app.db.outboxMessage.count({ where: { shopId, eventName: 'cart_abandoned' } })).toBe(2);
    await s.until(() => events(workspaceId, 'added_to_cart').length === 6, 5000, 'the adds within the limits');
  });

  it('a shop’s own storefront settings win over the deployment’s defaults, for that shop only', async () => {
    const chosen = await shop();
    const other = await shop();
    const before = (await s.api('GET', '/api/settings', undefined, chosen.domain)).body;
    // the deprecated variables set in this stack are the defaults of shops that have not chosen
    expect(before).toMatchObject({
      storefront_events_per_email_day: 5,
      storefront_abandonments_per_email_day: 1,
      cart_abandonment_delay_minutes: 60,
    });
    const put = await s.api(
      'PUT',
      '/api/settings',
      { storefront_events_per_email_day: 2, cart_abandonment_delay_minutes: 15 },
      chosen.domain,
    );
    expect(put.status).toBe(200);
    const refused = await s.api('PUT', '/api/settings', { storefront_events_per_email_day: 0 }, chosen.domain);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toMatch(/storefront_events_per_email_day/);
    expect((await s.api('GET', '/api/settings', undefined, chosen.domain)).body).toMatchObject({
      storefront_events_per_email_day: 2,
      cart_abandonment_delay_minutes: 15,
    });
    // only the merchant's choices are stored: what it left alone follows the deployment's default
    const stored = await s.app.db.shopSettings.findUniqueOrThrow({ where: { shopId: chosen.shopId } });
    expect(Object.keys(JSON.parse(stored.data)).sort()).toEqual(['cart_abandonment_delay_minutes', 'storefront_events_per_email_day']);

    const email = 'settings.shopper@example.com';
    for (const sh of [chosen, other]) {
      await customerWebhook(sh.domain, email);
      await sendBatch(s, batch(sh.key, randomUUID(), [ev.add(MUG), ev.add(TOTE), ev.add(MUG), ev.add(TOTE)], { email }));
    }
    expect(await s.app.db.outboxMessage.count({ where: { shopId: chosen.shopId, eventName: 'added_to_cart' } })).toBe(2);
    expect(await s.app.db.outboxMessage.count({ where: { shopId: other.shopId, eventName: 'added_to_cart' } })).toBe(4);
    const cartDue = async (shopId: string) => {
      const m = await s.app.db.outboxMessage.findFirstOrThrow({ where: { shopId, eventName: 'cart_abandoned' } });
      return m.runAt.getTime() - clock.now().getTime();
    };
    // the cart's abandonment is due the shop's delay after the last add (stamped by the pixel a moment ago)
    expect(Math.round((await cartDue(chosen.shopId)) / MIN)).toBe(15);
    expect(Math.round((await cartDue(other.shopId)) / MIN)).toBe(60);
  });

  it('customers/redact erases the email’s claims, trust row and the claimants’ waiting events; data_request lists them first', async () => {
    const { domain, key, shopId } = await shop();
    const email = 'claimed.then.redacted@example.com';
    const claimant = randomUUID();
    await sendBatch(s, batch(key, claimant, [ev.view(MUG)]));
    await sendBatch(s, batch(key, claimant, [ev.contact()], { email }));
    await sendBatch(s, batch(key, randomUUID(), [ev.view(TOTE)])); // someone else's, kept
    expect([await s.app.db.pixelClaim.count({ where: { shopId } }), await s.app.db.pixelShopper.count({ where: { shopId } })]).toEqual([
      1, 1,
    ]);

    await s.webhook(
      'customers/data_request',
      { shop_domain: domain, customer: { id: 515151, email }, orders_requested: [], data_request: { id: 778 } },
      { domain },
    );
    const storefront = JSON.parse((await s.app.db.dataExport.findFirstOrThrow({ where: { shopId } })).content).storefront;
    expect(storefront.claims).toEqual([expect.objectContaining({ client_id: claimant })]);
    expect(storefront.confirmed).toEqual([expect.objectContaining({ state: 'unknown', source: 'admin_api' })]);
    expect(storefront.waiting_events.map((e: { client_id: string; name: string }) => [e.client_id, e.name]).sort()).toEqual([
      [claimant, 'checkout_started'],
      [claimant, 'product_viewed'],
    ]);

    await s.webhook(
      'customers/redact',
      { shop_domain: domain, customer: { id: 515151, email: 'Claimed.Then.Redacted@example.com' }, orders_to_redact: [] },
      { domain },
    );
    expect(await s.app.db.pixelClaim.count({ where: { shopId } })).toBe(0);
    expect(await s.app.db.pixelShopper.count({ where: { shopId } })).toBe(0);
    expect(await s.app.db.pixelEvent.findMany({ where: { shopId }, select: { clientId: true } })).toEqual([
      { clientId: expect.not.stringMatching(claimant) },
    ]);
    expect(await tablesContaining(s.app.db, claimant)).toEqual([]);
  });
});

describe(`storefront per-IP limit (${testProvider})`, () => {
  let s: Stack;
  let key: string;
  // the limits follow the app's clock: held while they are counted, so no real time refills them
  const clock = new HoldableClock();
  beforeAll(async () => {
    s = await startStack({ env: { PIXEL_RATE_PER_IP: '2', TRUST_PROXY: '1' }, server: { now: clock.now } });
    await s.connectShop();
    key = await activatePixel(s);
  });
  afterAll(() => s.close());

  const post = (clientId: string, forwardedFor: string) =>
    fetch(`${s.app.url}/pixel/events`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8', 'x-forwarded-for': forwardedFor },
      body: batch(key, clientId, [ev.page()]),
    });
  const stored = () => s.app.db.webhookReceipt.count({ where: { kind: 'pixel' } });

  it('cuts a sender rotating client ids to its address’s rate, whatever it writes in X-Forwarded-For; other addresses go on', async () => {
    clock.hold();
    const before = await stored();
    const statuses = new Set<number>();
    // 300 requests, a fresh client id each, all from 203.0.113.7 as the one trusted proxy saw it,
    // with forged X-Forwarded-For entries of the sender's own to the left
    for (let i = 0; i < 300; i++) statuses.add((await post(randomUUID(), `198.51.100.${i % 250}, 203.0.113.7`)).status);
    expect([...statuses]).toEqual([204]);
    await s.settle();
    // a burst of 20 (10× the rate)
    expect((await stored()) - before).toBe(20);
    // then 2 a second of the app's clock
    clock.advance(1_000);
    for (let i = 0; i < 5; i++) await post(randomUUID(), `198.51.100.${i}, 203.0.113.7`);
    await s.settle();
    expect((await stored()) - before).toBe(22);
    // IPv6: a sender rotating addresses within its /64 is one key
    const v6 = await stored();
    for (let i = 0; i < 60; i++) await post(randomUUID(), `2001:db8:7:7::${(i + 1).toString(16)}`);
    await s.settle();
    expect((await stored()) - v6).toBe(20);
    // other addresses are not limited by it
    const others = await stored();
    for (let i = 0; i < 5; i++) expect((await post(randomUUID(), `192.0.2.${i + 1}`)).status).toBe(204);
    await s.settle();
    expect((await stored()) - others).toBe(5);
    clock.release();
    const metrics = await (await fetch(`${s.app.url}/metrics`)).text();
    expect(metrics).toMatch(/^connector_pixel_requests_total\{outcome="rate_limited_ip"\} [1-9]\d*$/m);
  }, 60_000);

  it('without a trusted proxy, X-Forwarded-For is ignored: the socket’s address is limited', async () => {
    const localClock = new HoldableClock();
    const local = await startStack({ env: { PIXEL_RATE_PER_IP: '2' }, server: { now: localClock.now } });
    try {
      await local.connectShop();
      const localKey = await activatePixel(local);
      localClock.hold();
      const before = await local.app.db.webhookReceipt.count({ where: { kind: 'pixel' } });
      for (let i = 0; i < 100; i++) {
        await fetch(`${local.app.url}/pixel/events`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain', 'x-forwarded-for': `198.51.100.${i}` },
          body: batch(localKey, randomUUID(), [ev.page()]),
        });
      }
      await local.settle();
      // every request came from this test's address: its burst of 20, whatever they wrote
      expect((await local.app.db.webhookReceipt.count({ where: { kind: 'pixel' } })) - before).toBe(20);
    } finally {
      await local.close();
    }
  }, 60_000);
});
