// Storefront events while Shopify's Admin API is slow, throttled or failing (issue 43, part 0),
// over the whole stack: a view or add to cart whose product Shopify has not described yet waits,
// is described by a later lookup (the retry pass, driven here by hand on the app's clock), and is
// then sent exactly once, the way it would have been at once; the visitor's later events wait
// behind it, in order. Only what Shopify says it does not have is dropped at once; what it never
// describes within the window is dropped then, and counted.
import { randomUUID } from 'node:crypto';
import { TestClock } from '../helpers/clock';
import { testProvider } from '../helpers/db';
import { activatePixel, batch, ev, MUG, postPixel, sendBatch, TOTE, type Product } from '../helpers/pixel';
import { startStack, type Stack } from '../helpers/stack';

const MIN = 60_000;
const HOUR = 3_600_000;
const NODES = /\bnodes\s*\(/;

describe(`storefront events while Shopify is slow (${testProvider})`, () => {
  let s: Stack;
  const clock = new TestClock();
  let n = 0;
  let customerId = 43_000;
  beforeAll(async () => {
    s = await startStack({ server: { now: clock.now } });
  });
  afterAll(() => s.close());

  async function shop(rateLimit?: number): Promise<{ domain: string; key: string; workspaceId: string; shopId: string }> {
    const domain = `slow-${++n}.myshopify.com`;
    const { workspaceId, shopId } = await s.connectShop(domain, { rateLimit });
    const key = await activatePixel(s, domain);
    return { domain, key, workspaceId, shopId };
  }
  /** A logged-in shopper: a customer Shopify sent the app (customers/create vouches for the email). */
  const customerPayload = (email: string) => ({ ...s.fixture('customers-create'), id: ++customerId, email });
  const customer = async (domain: string, email: string) => {
    await s.webhook('customers/create', customerPayload(email), { domain });
    return email;
  };
  /** Many logged-in shoppers at once, as Shopify sends their customers/create: stored together, then processed. */
  const customers = async (domain: string, emails: string[]) => {
    const sent = await Promise.all(
      emails.map((email) =>
        s.shop.sendWebhook(s.app.url, {
          topic: 'customers/create',
          shopDomain: domain,
          payload: customerPayload(email),
        }),
      ),
    );
    expect(sent.map((r) => r.status).filter((st) => st !== 200)).toEqual([]);
    // one wait for the whole batch, long enough for a loaded machine: a guard against a hang, not a bound on speed
    await s.settle(60_000);
    return emails;
  };
  const events = (workspaceId: string, eventName?: string) => s.emulator.events({ workspaceId, eventName });
  const waiting = (shopId: string) => s.app.db.pixelEvent.count({ where: { shopId, describeAt: { not: null } } });
  const cached = (shopId: string, ids: string[]) => s.app.db.productInfo.count({ where: { shopId, productId: { in: ids } } });
  const metrics = async () => (await fetch(`${s.app.url}/metrics`)).text();
  const metric = (text: string, name: string) =>
    Number(new RegExp(`^${name.replace(/[{}]/g, (c) => `\\${c}`)} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  /** The retry pass, as the worker runs it, once the events' lookups are due; then stage 2 takes its receipts. */
  async function retry(advanceMs = 20 * MIN): Promise<void> {
    clock.advance(advanceMs);
    await s.app.retryStorefrontProducts();
    await s.settle();
  }
  /** One product of a shop's catalog of the fake Admin API, with its variant. */
  function product(domain: string, id: number): Product {
    const p: Product = { id: String(id), title: `Product ${id}`, variantId: String(id + 100_000), price: 5 + (id % 20), handle: `p-${id}` };
    s.shop.addProduct(domain, { id: p.id, handle: p.handle!, title: p.title, variants: [{ id: p.variantId, price: p.price }] });
    return p;
  }
  /** [email, product id] of each viewed_product the service received. */
  const viewed = (workspaceId: string) =>
    events(workspaceId, 'viewed_product')
      .map((e) => [e.email, e.event_attribute.product_id] as [string, string])
      .sort();

  it('keeps the views of a logged-in shopper when the Admin API answers after the unit’s deadline, and sends each once it is described', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = await customer(domain, 'slow.shopper@example.com');
    // every product lookup of this shop answers after 3 s
    const end = s.shop.degrade(domain, { only: NODES, delayMs: 3000 });
    try {
      expect(await sendBatch(s, batch(key, randomUUID(), [ev.view(MUG), ev.view(TOTE)], { email }))).toBe(204);
      // before, both views were dropped here: nothing queued, nothing kept
      expect(await s.app.db.outboxMessage.count({ where: { shopId, eventName: 'viewed_product' } })).toBe(0);
      expect(await waiting(shopId)).toBe(2);
      const receipt = await s.app.db.webhookReceipt.findFirstOrThrow({
        where: { shopDomain: domain, kind: 'pixel' },
        orderBy: { id: 'desc' },
      });
      expect(receipt).toMatchObject({
        outcome: 'accepted',
        reason: expect.stringMatching(/2 event\(s\) wait for Shopify to describe their products/),
      });
      expect((await s.api('GET', '/api/pixel', undefined, domain)).body.activity).toMatchObject({ products_waiting: 2 });
      // the stack's first scrape: the gauge is read now (later scrapes may serve it up to 15 s old)
      expect(metric(await metrics(), 'connector_pixel_events_waiting_for_products')).toBe(2);
      // the lookup the unit stopped waiting for goes on, and caches what Shopify says
      await s.until(async () => (await cached(shopId, [MUG.id, TOTE.id])) === 2, 10_000, 'the late answer cached');
      const lookups = s.shop.productLookups(domain).length;
      await retry(2 * MIN);
      const sent = await s.until(() => (viewed(workspaceId).length >= 2 ? viewed(workspaceId) : null), 5000, 'the views');
      expect(sent).toEqual([
        [email, MUG.id],
        [email, TOTE.id],
      ]);
      expect(events(workspaceId, 'viewed_product')[0]!.event_attribute).toMatchObject({
        product_title: expect.any(String),
        currency: 'USD',
      });
      // described from the cache: Shopify was not asked again
      expect(s.shop.productLookups(domain)).toHaveLength(lookups);
      expect(await waiting(shopId)).toBe(0);
      // nothing more is due: no second send, however often the pass runs
      await retry();
      await new Promise((r) => setTimeout(r, 300));
      expect(viewed(workspaceId)).toEqual(sent);
      expect((await s.api('GET', '/api/pixel', undefined, domain)).body.activity).toMatchObject({ products_waiting: 0 });
    } finally {
      end();
    }
  });

  it('120 logged-in shoppers viewing 12 of 400 products each, with a 3-s Admin API: every view is sent once, each id asked once', async () => {
    const { domain, key, workspaceId, shopId } = await shop(1000);
    const catalog = Array.from({ length: 400 }, (_, i) => product(domain, 43_000 + i));
    const shoppers = await customers(
      domain,
      Array.from({ length: 120 }, (_, i) => `shopper.${i}@example.com`),
    );
    const end = s.shop.degrade(domain, { only: NODES, delayMs: 3000 });
    try {
      // a busy storefront: the batches arrive together, and stage 2 takes them in a unit or two
      await s.app.processor.stop();
      try {
        for (const [i, email] of shoppers.entries()) {
          const seen = Array.from({ length: 12 }, (_, j) => catalog[(i * 12 + j * 7) % 400]!);
          expect(
            (
              await postPixel(
                s,
                batch(
                  key,
                  `client-${i}`,
                  seen.map((p) => ev.view(p)),
                  { email },
                ),
              )
            ).status,
          ).toBe(204);
        }
      } finally {
        s.app.processor.start();
      }
      await s.settle(30_000);
      const outcomes = await s.app.db.webhookReceipt.findMany({ where: { shopDomain: domain, kind: 'pixel' }, select: { outcome: true } });
      expect(outcomes.filter((o) => o.outcome !== 'accepted')).toEqual([]);
      // none lost: each view queued, or waiting for its product
      const queued = () => s.app.db.outboxMessage.count({ where: { shopId, eventName: 'viewed_product' } });
      expect((await queued()) + (await waiting(shopId))).toBe(1440);

      await s.until(
        async () =>
          (await cached(
            shopId,
            catalog.map((p) => p.id),
          )) === 400,
        30_000,
        'every product cached',
      );
      for (let round = 0; round < 5 && (await waiting(shopId)) > 0; round++) await retry();
      expect(await waiting(shopId)).toBe(0);
      expect(await queued()).toBe(1440);
      const sent = await s.until(
        () => (events(workspaceId, 'viewed_product').length >= 1440 ? viewed(workspaceId) : null),
        60_000,
        'every view at the service',
      );
      const expected = shoppers.flatMap((email, i) => Array.from({ length: 12 }, (_, j) => [email, catalog[(i * 12 + j * 7) % 400]!.id]));
      expect(sent).toEqual(expected.sort());
      // as few calls as Shopify's limits allow: each product and variant asked about once, 250 ids a call at most
      const asked = s.shop.productLookups(domain).flatMap((l) => l.ids);
      expect(new Set(asked).size).toBe(asked.length);
      expect(asked).toHaveLength(800);
      expect(Math.max(...s.shop.productLookups(domain).map((l) => l.ids.length))).toBeLessThanOrEqual(250);
    } finally {
      end();
    }
  }, 180_000);

  it('a throttled Admin API: the lookup waits for the bucket past the unit’s deadline, and the views follow', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = await customer(domain, 'busy.shop@example.com');
    const [a, b] = [product(domain, 44_001), product(domain, 44_002)];
    // another app empties the bucket before each of our first three calls; it restores 4 points a
    // second, and our call (4 ids) needs 10: each THROTTLED answer asks for 2.5 s, past the deadline
    let drains = 3;
    s.shop.addGraphqlHandler((req) => {
      if (req.shop.domain === domain && NODES.test(req.query) && drains-- > 0)
        s.shop.setThrottle(domain, { currentlyAvailable: 0, restoreRate: 4 });
      return undefined;
    });
    await sendBatch(s, batch(key, randomUUID(), [ev.view(a), ev.add(b)], { email }));
    expect(await waiting(shopId)).toBe(2);
    await s.until(async () => (await cached(shopId, [a.id, b.id])) === 2, 20_000, 'the throttled lookup answered');
    await retry(2 * MIN);
    await s.until(() => events(workspaceId, 'added_to_cart').length === 1, 5000, 'the add');
    expect(viewed(workspaceId)).toEqual([[email, a.id]]);
    expect(events(workspaceId, 'added_to_cart')[0]!.event_attribute).toMatchObject({ product_id: b.id, quantity: 1, line_total: b.price });
    expect(await waiting(shopId)).toBe(0);
  }, 40_000);

  it('a failing Admin API (5xx for a while): the events wait, looked up again with backoff, and go once Shopify is back', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = await customer(domain, 'outage.shopper@example.com');
    const [a, b] = [product(domain, 45_001), product(domain, 45_002)];
    const calls = () => s.shop.tokenStats(domain).graphqlCalls;
    const end = s.shop.degrade(domain, { only: NODES, status: 503 });
    let ended = false;
    try {
      await sendBatch(s, batch(key, randomUUID(), [ev.view(a), ev.view(b)], { email }));
      expect(await waiting(shopId)).toBe(2);
      for (let i = 1; i <= 3; i++) {
        const before = calls();
        await retry();
        // one lookup per retry, however many events wait; the events wait on
        expect(calls() - before).toBeLessThanOrEqual(1);
        expect(await waiting(shopId)).toBe(2);
        // nothing is due until the backoff has passed: the pass stores no retry at once
        expect(await s.app.retryStorefrontProducts()).toBe(0);
      }
      const rows = await s.app.db.pixelEvent.findMany({ where: { shopId }, select: { attempts: true, describeAt: true } });
      expect(rows.every((r) => r.attempts >= 3 && r.describeAt! > clock.now())).toBe(true);
      expect(events(workspaceId, 'viewed_product')).toEqual([]);
      end();
      ended = true;
      await retry();
      await s.until(() => viewed(workspaceId).length === 2, 5000, 'the views after the outage');
      expect(viewed(workspaceId)).toEqual([
        [email, a.id],
        [email, b.id],
      ]);
      await retry();
      await new Promise((r) => setTimeout(r, 300));
      expect(viewed(workspaceId)).toHaveLength(2);
      expect(await waiting(shopId)).toBe(0);
    } finally {
      if (!ended) end();
    }
  });

  it('keeps the order of a visitor’s events: a checkout after an add still ends the cart, however late the add is described', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = await customer(domain, 'in.order@example.com');
    const p = product(domain, 46_001);
    const client = randomUUID();
    const end = s.shop.degrade(domain, { only: NODES, status: 503 });
    try {
      await sendBatch(s, batch(key, client, [ev.view(p), ev.add(p)], { email }));
      // the checkout needs no product data, but waits behind the add
      await sendBatch(s, batch(key, client, [ev.checkout()], { email }));
      expect(await waiting(shopId)).toBe(3);
      expect(
        await s.app.db.pixelEvent.findMany({ where: { shopId }, orderBy: { id: 'asc' }, select: { name: true, waitsFor: true } }),
      ).toEqual([
        { name: 'product_viewed', waitsFor: 'product' },
        { name: 'product_added_to_cart', waitsFor: 'product' },
        { name: 'checkout_started', waitsFor: 'turn' },
      ]);
    } finally {
      end();
    }
    await retry();
    await s.until(() => events(workspaceId, 'added_to_cart').length === 1, 5000, 'the add');
    expect(viewed(workspaceId)).toEqual([[email, p.id]]);
    // as at once: the add started a cart abandonment, the checkout ended it; neither is left pending
    expect(
      await s.app.db.outboxMessage.count({
        where: { shopId, eventName: { in: ['cart_abandoned', 'browse_abandoned'] }, status: { in: ['queued', 'held'] } },
      }),
    ).toBe(0);
    expect(await waiting(shopId)).toBe(0);
  });

  it('an anonymous visitor’s views wait for their products, then for an email: Shopify’s vouch sends each once', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const p = product(domain, 47_001);
    const q = product(domain, 47_002);
    const client = randomUUID();
    const end = s.shop.degrade(domain, { only: NODES, status: 503 });
    try {
      await sendBatch(s, batch(key, client, [ev.view(p)]));
      await sendBatch(s, batch(key, client, [ev.view(q)]));
      expect(await s.app.db.pixelEvent.findMany({ where: { shopId }, orderBy: { id: 'asc' }, select: { waitsFor: true } })).toEqual([
        { waitsFor: 'product' },
        { waitsFor: 'product' },
      ]);
    } finally {
      end();
    }
    // described while the visitor is still anonymous: now they wait for an email only, with Shopify's data
    await retry();
    const rows = await s.app.db.pixelEvent.findMany({ where: { shopId }, orderBy: { id: 'asc' } });
    expect(rows.map((r) => [r.waitsFor, r.describeAt, JSON.parse(r.data).product_title])).toEqual([
      ['email', null, p.title],
      ['email', null, q.title],
    ]);
    // the checkout's email, vouched by its webhook: both views count for it, once
    const email = 'anonymous.then.known@example.com';
    await customer(domain, email);
    await sendBatch(s, batch(key, client, [ev.contact()], { email }));
    await s.until(() => viewed(workspaceId).length === 2, 5000, 'the stitched views');
    expect(viewed(workspaceId)).toEqual([
      [email, p.id],
      [email, q.id],
    ]);
    await retry();
    await new Promise((r) => setTimeout(r, 300));
    expect(viewed(workspaceId)).toHaveLength(2);
    expect(await s.app.db.pixelEvent.count({ where: { shopId } })).toBe(0);
  });

  it('drops at once only what Shopify says it does not have; a visitor who withdraws consent while waiting loses everything', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = await customer(domain, 'ghost.viewer@example.com');
    const real = product(domain, 48_001);
    const ghost: Product = { id: '48999', title: 'Ghost', variantId: '148999', price: 1 };
    const before = await metrics();
    const end = s.shop.degrade(domain, { only: NODES, delayMs: 3000 });
    try {
      await sendBatch(s, batch(key, randomUUID(), [ev.view(ghost), ev.view(real)], { email }));
      // Shopify could not say yet that the ghost is not the shop's: both wait
      expect(await waiting(shopId)).toBe(2);
      // another visitor's view waits too (a product of its own, asked in a lookup of its own), then they withdraw consent
      const leaver = randomUUID();
      const other = product(domain, 48_002);
      await sendBatch(s, batch(key, leaver, [ev.view(other)], { email: await customer(domain, 'leaver@example.com') }));
      expect(await s.app.db.pixelEvent.count({ where: { shopId, clientId: leaver } })).toBe(1);
      await sendBatch(s, batch(key, leaver, [ev.page()], { email: 'leaver@example.com', marketing: false }));
      expect(await s.app.db.pixelEvent.count({ where: { shopId, clientId: leaver } })).toBe(0);
      await s.until(async () => (await cached(shopId, [real.id, other.id])) === 2, 10_000, 'the late answers');
    } finally {
      end();
    }
    await retry(2 * MIN);
    await s.until(() => viewed(workspaceId).length === 1, 5000, 'the real view');
    await new Promise((r) => setTimeout(r, 300));
    expect(viewed(workspaceId)).toEqual([[email, real.id]]);
    expect(await waiting(shopId)).toBe(0);
    const after = await metrics();
    const dropped = (reason: string) =>
      metric(after, `connector_pixel_products_dropped_total{reason="${reason}"}`) -
      metric(before, `connector_pixel_products_dropped_total{reason="${reason}"}`);
    expect(dropped('unknown')).toBe(1);
    expect((await s.api('GET', '/api/pixel', undefined, domain)).body.activity).toMatchObject({ products_dropped: 1, products_waiting: 0 });
  });

  it('drops, counts and shows what Shopify never describes within PIXEL_ANONYMOUS_HOURS', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = await customer(domain, 'never.described@example.com');
    const p = product(domain, 49_001);
    const before = await metrics();
    const end = s.shop.degrade(domain, { only: NODES, status: 500 });
    try {
      await sendBatch(s, batch(key, randomUUID(), [ev.view(p), ev.add(p)], { email }));
      expect(await waiting(shopId)).toBe(2);
      const text = await metrics();
      expect(metric(text, 'connector_pixel_events_total{outcome="waiting_for_product"}')).toBeGreaterThanOrEqual(2);
      await retry(12 * HOUR);
      expect(await waiting(shopId)).toBe(2);
      clock.advance(13 * HOUR);
      expect(await s.app.sweepStorefront()).toMatchObject({ events: 2 });
    } finally {
      end();
    }
    expect(await waiting(shopId)).toBe(0);
    await retry();
    expect(events(workspaceId).filter((e) => ['viewed_product', 'added_to_cart'].includes(e.event_name))).toEqual([]);
    const after = await metrics();
    expect(
      metric(after, 'connector_pixel_products_dropped_total{reason="expired"}') -
        metric(before, 'connector_pixel_products_dropped_total{reason="expired"}'),
    ).toBe(2);
    expect((await s.api('GET', '/api/pixel', undefined, domain)).body.activity).toMatchObject({ products_waiting: 0, products_expired: 2 });
  });
});
