// GET /api/product-alerts over the whole stack, on both databases: the subscriptions still waiting,
// per product and variant with Shopify's titles, biggest first; the last restocks and price drops
// with how each ended; the week's back_in_stock and price_dropped messages queued and delivered;
// the theme editor's link. Counts and products only, never an email; the shop's own, no other's;
// refused without a session token.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { TestClock } from '../helpers/clock';
import { testProvider } from '../helpers/db';
import { activatePixel, batch, ev, knownCustomer, MUG, sendBatch } from '../helpers/pixel';
import { API_KEY, startStack, type Stack } from '../helpers/stack';

const DAY = 86_400_000;
const SOCKS = { id: '8105', title: 'Merino Socks', small: '45105', large: '45107' };
/** A product the shop's catalog has never described to the app. */
const UNCACHED = { id: '9990', variantId: '99901' };

describe(`GET /api/product-alerts (${testProvider})`, () => {
  let s: Stack;
  const clock = new TestClock();
  let n = 0;
  beforeAll(async () => {
    s = await startStack({ server: { now: clock.now, productAlertsPollMs: 3_600_000 } });
  });
  afterAll(() => s.close());

  async function shop() {
    const domain = `alerts-view-${++n}.myshopify.com`;
    const { shopId } = await s.connectShop(domain);
    const send = async (topic: string, payload: unknown) => {
      expect((await s.webhook(topic, payload, { domain, webhookId: randomUUID() })).status).toBe(200);
    };
    const stock = async (variantId: string, quantity: number) => {
      for (const w of s.shop.setInventory(domain, variantId, quantity)!.webhooks) await send(w.topic, w.payload);
    };
    const subscribe = (email: string, variantId: string, productId = SOCKS.id, more: { notifiedAt?: Date; expiresAt?: Date } = {}) =>
      s.app.db.stockSubscription.create({
        data: {
          shopId,
          variantId,
          productId,
          email,
          source: 'guest',
          createdAt: clock.now(),
          renewedAt: clock.now(),
          expiresAt: more.expiresAt ?? new Date(clock.now().getTime() + 90 * DAY),
          notifiedAt: more.notifiedAt ?? null,
        },
      });
    const view = (query = '') => s.api('GET', `/api/product-alerts${query}`, undefined, domain);
    return { domain, shopId, send, stock, subscribe, view };
  }

  it('shows waiting subscriptions per variant, the last signals and the week’s messages, without an email', async () => {
    const sh = await shop();
    // read_products, which the restock's read of the variant needs, comes with the pixel's scopes
    const key = await activatePixel(s, sh.domain);
    // two subscribers of the small size, told when it comes back
    await sh.subscribe('ann@example.com', SOCKS.small);
    await sh.subscribe('bob@example.com', SOCKS.small);
    await sh.stock(SOCKS.small, 5);
    await s.app.runProductAlerts();

    // the large size sells out (Shopify's products/update caches the product) and three wait for it;
    // one told before and one expired do not count
    await sh.stock(SOCKS.large, 0);
    for (const email of ['cara@example.com', 'dan@example.com', 'eve@example.com']) await sh.subscribe(email, SOCKS.large);
    await sh.subscribe('told@example.com', SOCKS.large, SOCKS.id, { notifiedAt: clock.now() });
    await sh.subscribe('gone@example.com', SOCKS.large, SOCKS.id, { expiresAt: new Date(clock.now().getTime() - 1000) });
    await sh.subscribe('fay@example.com', UNCACHED.variantId, UNCACHED.id);

    // a vouched shopper viewed the mug; its price drops 18 -> 15
    knownCustomer(s, 'viewer@example.com', sh.domain);
    expect(await sendBatch(s, batch(key, randomUUID(), [ev.view(MUG, clock.now())], { email: 'viewer@example.com' }))).toBe(204);
    await s.settle();
    await sh.send('products/update', s.shop.setPrice(sh.domain, MUG.variantId, 15)!.payload);
    await s.app.runProductAlerts();
    await s.until(
      async () =>
        (await s.app.db.outboxMessage.count({
          where: { shopId: sh.shopId, eventName: { in: ['back_in_stock', 'price_dropped'] }, status: 'delivered' },
        })) === 3,
      20_000,
      'the three alerts to be delivered',
    );

    const res = await sh.view();
    expect(res.status).toBe(200);
    expect(res.body.theme_editor_url).toBe(
      `https://${sh.domain}/admin/themes/current/editor?template=product&addAppBlockId=${API_KEY}/notify-me&target=mainSection`,
    );
    expect(res.body.waiting).toEqual([
      {
        product_id: SOCKS.id,
        variant_id: SOCKS.large,
        product_title: SOCKS.title,
        variant_title: 'Large',
        available: false,
        subscribers: 3,
        since: expect.any(String),
      },
      {
        product_id: UNCACHED.id,
        variant_id: UNCACHED.variantId,
        product_title: null,
        variant_title: null,
        available: null,
        subscribers: 1,
        since: expect.any(String),
      },
    ]);
    expect(res.body.waiting_truncated).toBe(false);
    // newest first: the drop, then the restock
    expect(
      res.body.recent.map((r: Record<string, unknown>) => [r.kind, r.event_name, r.variant_id, r.product_title, r.state, r.queued]),
    ).toEqual([
      ['price_drop', 'price_dropped', MUG.variantId, MUG.title, 'done', 1],
      ['restock', 'back_in_stock', SOCKS.small, SOCKS.title, 'done', 2],
    ]);
    expect(res.body.recent[0]).toMatchObject({ price: 15, previous_price: 18, currency: 'USD', variant_title: expect.any(String) });
    expect(res.body.recent[1]).toMatchObject({ variant_title: 'Small', note: '2 message(s) queued', price: null, currency: null });
    expect(res.body.totals).toEqual({
      window_days: 7,
      waiting_subscribers: 4,
      waiting_variants: 2,
      events: {
        back_in_stock: { queued: 2, delivered: 2, waiting: 0 },
        price_dropped: { queued: 1, delivered: 1, waiting: 0 },
      },
    });
    // counts and products, never a shopper's address
    expect(JSON.stringify(res.body)).not.toMatch(/@/);

    // the biggest first, capped
    const one = await sh.view('?waiting_limit=1&recent_limit=1');
    expect(one.body.waiting.map((w: { variant_id: string }) => w.variant_id)).toEqual([SOCKS.large]);
    expect(one.body.waiting_truncated).toBe(true);
    expect(one.body.recent.map((r: { kind: string }) => r.kind)).toEqual(['price_drop']);
    expect(one.body.totals.waiting_subscribers).toBe(4);

    // a week later the messages are out of the window; the subscriptions still wait
    clock.advance(8 * DAY);
    try {
      const later = (await sh.view()).body;
      expect(later.totals.events).toEqual({
        back_in_stock: { queued: 0, delivered: 0, waiting: 0 },
        price_dropped: { queued: 0, delivered: 0, waiting: 0 },
      });
      expect(later.totals.waiting_subscribers).toBe(4);
    } finally {
      clock.advance(-8 * DAY);
    }
  });

  it('shows a shop its own subscriptions and signals only', async () => {
    const a = await shop();
    const b = await shop();
    await activatePixel(s, a.domain);
    await a.subscribe('ann@example.com', SOCKS.large);
    await a.stock(SOCKS.small, 5);
    await s.app.runProductAlerts();
    await b.subscribe('bob@example.com', SOCKS.large);
    await b.subscribe('cara@example.com', SOCKS.large);

    const seenByB = (await b.view()).body;
    expect(seenByB.theme_editor_url).toContain(`https://${b.domain}/admin/`);
    expect(seenByB.recent).toEqual([]);
    expect(seenByB.waiting.map((w: { subscribers: number }) => w.subscribers)).toEqual([2]);
    expect(seenByB.totals.waiting_subscribers).toBe(2);
    const seenByA = (await a.view()).body;
    expect(seenByA.recent.map((r: { kind: string }) => r.kind)).toEqual(['restock']);
    expect(seenByA.waiting.map((w: { subscribers: number }) => w.subscribers)).toEqual([1]);
  });

  it('refuses a request without a valid session token, and bad parameters, with the contract’s error shape', async () => {
    const bare = await fetch(`${s.app.url}/api/product-alerts`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get('x-shopify-retry-invalid-session-request')).toBe('1');
    expect(await bare.json()).toEqual({ error: { code: expect.stringMatching(/^[a-z_]+$/), message: expect.any(String) } });
    const forged = await fetch(`${s.app.url}/api/product-alerts`, { headers: { authorization: 'Bearer not.a.jwt' } });
    expect(forged.status).toBe(401);

    const sh = await shop();
    for (const q of ['?waiting_limit=0', '?waiting_limit=201', '?recent_limit=abc', '?email=ann@example.com']) {
      const res = await sh.view(q);
      expect({ q, status: res.status, code: res.body.error?.code }).toEqual({ q, status: 400, code: 'invalid_request' });
      expect(res.body.error.message).toEqual(expect.any(String));
    }
  });

  it('links the block by the handle the theme extension gives it', () => {
    const blocks = fs.readdirSync(path.resolve(__dirname, '..', '..', 'extensions', 'notify-me', 'blocks'));
    expect(blocks).toEqual(['notify-me.liquid']);
  });
});
