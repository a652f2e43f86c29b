// Back in stock and price drops over the whole stack, on both databases: who is told (notify-me
// subscribers, vouched shoppers who viewed or carted the variant), once; what they are told
// (Shopify's catalog); what tells nobody (a repeated webhook, a variant sold out again, a price rise,
// a shopper who bought it or viewed it too long ago); and Shopify unavailable for a while.
import { randomUUID } from 'node:crypto';
import { TestClock } from '../helpers/clock';
import { testProvider } from '../helpers/db';
import { activatePixel, batch, ev, knownCustomer, MUG, sendBatch, type Product } from '../helpers/pixel';
import { startStack, type Stack } from '../helpers/stack';

const DAY = 86_400_000;
const SOCKS_SMALL: Product = { id: '8105', title: 'Merino Socks', variantId: '45105', price: 16, handle: 'merino-socks' };

describe(`back in stock and price drops (${testProvider})`, () => {
  let s: Stack;
  const clock = new TestClock();
  let n = 0;
  beforeAll(async () => {
    s = await startStack({ server: { now: clock.now, productAlertsPollMs: 3_600_000 } });
  });
  afterAll(() => s.close());

  async function shop() {
    const domain = `alerts-${++n}.myshopify.com`;
    const { workspaceId, shopId } = await s.connectShop(domain);
    const key = await activatePixel(s, domain);
    /** A shopper Shopify vouches for, identified on the storefront: returns what their later batches are sent as. */
    const shopper = async (email: string) => {
      knownCustomer(s, email, domain);
      const client = randomUUID();
      expect(await sendBatch(s, batch(key, client, [ev.contact(clock.now())], { email }))).toBe(204);
      return (events: unknown[]) => sendBatch(s, batch(key, client, events));
    };
    const send = async (topic: string, payload: unknown) => {
      const res = await s.webhook(topic, payload, { domain, webhookId: randomUUID() });
      expect(res.status).toBe(200);
    };
    const sent = (eventName: string) =>
      s.app.db.outboxMessage.findMany({ where: { shopId, eventName }, orderBy: { id: 'asc' } }).then((rows) =>
        rows.map((m) => ({
          email: m.email,
          status: m.status,
          attributes: JSON.parse(m.body).event_attribute as Record<string, unknown>,
        })),
      );
    const restock = async (variantId: string, quantity = 5) => {
      for (const w of s.shop.setInventory(domain, variantId, quantity)!.webhooks) await send(w.topic, w.payload);
    };
    return { domain, shopId, workspaceId, shopper, send, sent, restock };
  }

  const subscribe = (shopId: string, email: string, variantId = SOCKS_SMALL.variantId) =>
    s.app.db.stockSubscription.create({
      data: {
        shopId,
        variantId,
        productId: SOCKS_SMALL.id,
        email,
        source: 'guest',
        createdAt: clock.now(),
        renewedAt: clock.now(),
        expiresAt: new Date(clock.now().getTime() + 90 * DAY),
      },
    });

  it('tells each subscriber and each shopper who saw it sold out, once, with Shopify’s product data', async () => {
    const sh = await shop();
    const ann = await sh.shopper('ann@example.com');
    const bob = await sh.shopper('bob@example.com');
    expect(await ann([ev.view(SOCKS_SMALL, clock.now())])).toBe(204);
    // bob saw only what was in stock
    expect(await bob([ev.view(MUG, clock.now())])).toBe(204);
    await s.settle();
    await subscribe(sh.shopId, 'cara@example.com');
    // a subscriber who also viewed it is told once
    await subscribe(sh.shopId, 'ann@example.com');

    await sh.restock(SOCKS_SMALL.variantId);
    await s.app.runProductAlerts();
    const told = await sh.sent('back_in_stock');
    expect(told.map((m) => m.email).sort()).toEqual(['ann@example.com', 'cara@example.com']);
    expect(told[0]!.attributes).toMatchObject({
      product_id: '8105',
      variant_id: '45105',
      product_title: 'Merino Socks',
      variant_title: 'Small',
      price: 16,
      currency: 'USD',
      product_url: `https://${sh.domain}/products/merino-socks`,
      image_url: expect.stringContaining('merino-socks'),
    });

    // Shopify delivers the restock again (a new webhook id): nobody is told twice
    const again = s.shop.setInventory(sh.domain, SOCKS_SMALL.variantId, 0)!;
    expect(again.webhooks.map((w) => w.topic)).toEqual(['variants/out_of_stock', 'products/update']);
    await sh.restock(SOCKS_SMALL.variantId);
    await s.app.runProductAlerts();
    expect(await sh.sent('back_in_stock')).toHaveLength(2);
    const signals = await s.app.db.productSignal.findMany({ where: { shopId: sh.shopId, kind: 'restock' }, orderBy: { id: 'asc' } });
    expect(signals.map((x) => [x.state, x.queued])).toEqual([
      ['done', 2],
      ['done', 0],
    ]);
  });

  it('tells nobody of a variant sold out again before it is read', async () => {
    const sh = await shop();
    await subscribe(sh.shopId, 'dan@example.com');
    const change = s.shop.setInventory(sh.domain, SOCKS_SMALL.variantId, 3)!;
    s.shop.setInventory(sh.domain, SOCKS_SMALL.variantId, 0);
    await sh.send('variants/in_stock', change.webhooks[0]!.payload);
    await s.app.runProductAlerts();
    expect(await sh.sent('back_in_stock')).toEqual([]);
    const signal = await s.app.db.productSignal.findFirstOrThrow({ where: { shopId: sh.shopId } });
    expect(signal).toMatchObject({ state: 'done', note: 'sold out again before it could be announced' });
    // the subscription still waits for the next restock
    expect(await s.app.db.stockSubscription.findFirstOrThrow({ where: { shopId: sh.shopId } })).toMatchObject({ notifiedAt: null });
  });

  it('keeps a restock while Shopify cannot be asked, and announces it once Shopify answers', async () => {
    const sh = await shop();
    await subscribe(sh.shopId, 'eve@example.com');
    const restore = s.shop.degrade(sh.domain, { only: /productVariant/, status: 503 });
    await sh.restock(SOCKS_SMALL.variantId);
    await s.app.runProductAlerts();
    expect(await sh.sent('back_in_stock')).toEqual([]);
    const waiting = await s.app.db.productSignal.findFirstOrThrow({ where: { shopId: sh.shopId } });
    expect(waiting.state).toBe('pending');
    expect(waiting.runAt.getTime()).toBeGreaterThan(clock.now().getTime());
    restore();
    // not due yet: nothing is asked
    await s.app.runProductAlerts();
    expect(await sh.sent('back_in_stock')).toEqual([]);
    clock.advance(waiting.runAt.getTime() - clock.now().getTime() + 1);
    await s.app.runProductAlerts();
    expect((await sh.sent('back_in_stock')).map((m) => m.email)).toEqual(['eve@example.com']);
  });

  it('tells recent viewers of a price drop, once a week; not after a rise, nor those who bought it, nor past 14 days', async () => {
    const sh = await shop();
    const old = await sh.shopper('old@example.com');
    expect(await old([ev.view(MUG, clock.now())])).toBe(204);
    await s.settle();
    clock.advance(10 * DAY);
    const ann = await sh.shopper('ann@example.com');
    const buyer = await sh.shopper('buyer@example.com');
    expect(await ann([ev.view(MUG, clock.now())])).toBe(204);
    expect(await buyer([ev.add(MUG, 1, clock.now())])).toBe(204);
    await s.settle();
    // the buyer ordered it after adding it to the cart
    const order = {
      ...s.fixture('orders-create'),
      email: 'buyer@example.com',
      contact_email: null,
      customer: null,
      checkout_token: null,
      created_at: clock.now().toISOString(),
    };
    order.line_items = [{ ...order.line_items[0], product_id: Number(MUG.id), variant_id: Number(MUG.variantId) }];
    await sh.send('orders/create', order);
    clock.advance(5 * DAY);

    // a rise tells nobody
    await sh.send('products/update', s.shop.setPrice(sh.domain, MUG.variantId, 20, clock.now())!.payload);
    // 20 -> 17.5 is 12.5% off: over the default 10%
    await sh.send('products/update', s.shop.setPrice(sh.domain, MUG.variantId, 17.5, clock.now())!.payload);
    await s.app.runProductAlerts();
    const drops = await sh.sent('price_dropped');
    expect(drops.map((m) => m.email)).toEqual(['ann@example.com']);
    expect(drops[0]!.attributes).toMatchObject({
      product_id: MUG.id,
      variant_id: MUG.variantId,
      price: 17.5,
      previous_price: 20,
      currency: 'USD',
    });

    // another drop within the week: not again
    await sh.send('products/update', s.shop.setPrice(sh.domain, MUG.variantId, 12, clock.now())!.payload);
    await s.app.runProductAlerts();
    expect(await sh.sent('price_dropped')).toHaveLength(1);
  });

  it('leaves out a shopper who unsubscribed from email marketing, but tells a subscriber who asked', async () => {
    const sh = await shop();
    const quit = await sh.shopper('quit@example.com');
    expect(await quit([ev.view(SOCKS_SMALL, clock.now())])).toBe(204);
    await s.settle();
    // Shopify says the customer behind that address unsubscribed
    await sh.send('customers/create', { id: 555, email: 'quit@example.com', first_name: 'Q', updated_at: clock.now().toISOString() });
    await sh.send('customers_email_marketing_consent/update', {
      customer_id: 555,
      email_address: 'quit@example.com',
      email_marketing_consent: { state: 'unsubscribed', opt_in_level: null, consent_updated_at: clock.now().toISOString() },
    });
    await subscribe(sh.shopId, 'quit@example.com', '45106');
    await sh.restock(SOCKS_SMALL.variantId);
    await s.app.runProductAlerts();
    expect(await sh.sent('back_in_stock')).toEqual([]);
    // the subscription is to another size: they asked, so they hear of it
    s.shop.setInventory(sh.domain, '45106', 0);
    await sh.restock('45106');
    await s.app.runProductAlerts();
    expect((await sh.sent('back_in_stock')).map((m) => [m.email, m.attributes.variant_id])).toEqual([['quit@example.com', '45106']]);
  });

  it('announces no drop that no longer holds, whatever order Shopify delivers the updates in', async () => {
    const sh = await shop();
    const ann = await sh.shopper('ann@example.com');
    expect(await ann([ev.view(MUG, clock.now())])).toBe(204);
    await s.settle();
    // a cut, then its revert a minute later, delivered the other way round: the older is stale
    const cut = s.shop.setPrice(sh.domain, MUG.variantId, 12, clock.now())!;
    const revert = s.shop.setPrice(sh.domain, MUG.variantId, 18, new Date(clock.now().getTime() + 60_000))!;
    await sh.send('products/update', revert.payload);
    await sh.send('products/update', cut.payload);
    await s.app.runProductAlerts();
    expect(await sh.sent('price_dropped')).toEqual([]);
    const row = await s.app.db.productInfo.findFirstOrThrow({ where: { shopId: sh.shopId, productId: MUG.id } });
    expect(JSON.parse(row.variants)[MUG.variantId].price).toBe(18);
    // in order this time, but the price is back up before the drop goes out: Shopify's price now decides
    const drop = s.shop.setPrice(sh.domain, MUG.variantId, 12, new Date(clock.now().getTime() + 120_000))!;
    s.shop.setPrice(sh.domain, MUG.variantId, 18);
    await sh.send('products/update', drop.payload);
    await s.app.runProductAlerts();
    expect(await sh.sent('price_dropped')).toEqual([]);
    expect(await s.app.db.productSignal.findFirstOrThrow({ where: { shopId: sh.shopId } })).toMatchObject({
      state: 'done',
      note: 'the price went back up before the drop could be announced',
    });
  });

  it('finishes a restock whose sold-out view is stamped ahead of the runner’s clock', async () => {
    const sh = await shop();
    // another process's clock ran an hour ahead when the view was recorded
    await s.app.db.productInterest.create({
      data: {
        shopId: sh.shopId,
        email: 'ahead@example.com',
        variantId: SOCKS_SMALL.variantId,
        productId: SOCKS_SMALL.id,
        viewedAt: new Date(clock.now().getTime() + 3_600_000),
        soldOutAt: new Date(clock.now().getTime() + 3_600_000),
        expiresAt: new Date(clock.now().getTime() + 30 * DAY),
      },
    });
    await sh.restock(SOCKS_SMALL.variantId);
    await s.app.runProductAlerts();
    expect((await sh.sent('back_in_stock')).map((m) => m.email)).toEqual(['ahead@example.com']);
  });

  it('holds to the merchant’s threshold and switch', async () => {
    const sh = await shop();
    const ann = await sh.shopper('ann@example.com');
    expect(await ann([ev.view(MUG, clock.now())])).toBe(204);
    await s.settle();
    expect((await s.api('PUT', '/api/settings', { price_drop_threshold_percent: 30 }, sh.domain)).status).toBe(200);
    // 18 -> 15 is 16.7% off: under 30%
    await sh.send('products/update', s.shop.setPrice(sh.domain, MUG.variantId, 15, clock.now())!.payload);
    await s.app.runProductAlerts();
    expect(await sh.sent('price_dropped')).toEqual([]);
    expect((await s.api('PUT', '/api/settings', { price_drop_threshold_percent: 101 }, sh.domain)).status).toBe(400);
    // 15 -> 10 is a third off, but the event is switched off
    expect((await s.api('PUT', '/api/settings', { events: { price_dropped: false } }, sh.domain)).status).toBe(200);
    await sh.send('products/update', s.shop.setPrice(sh.domain, MUG.variantId, 10, clock.now())!.payload);
    await s.app.runProductAlerts();
    expect(await sh.sent('price_dropped')).toEqual([]);
  });

  it('forgets a shopper’s interests when they ask to be forgotten, and exports them before', async () => {
    const sh = await shop();
    const ann = await sh.shopper('ann@example.com');
    expect(await ann([ev.view(SOCKS_SMALL, clock.now()), ev.add(MUG, 1, clock.now())])).toBe(204);
    await s.settle();
    expect(await s.app.db.productInterest.count({ where: { shopId: sh.shopId, email: 'ann@example.com' } })).toBe(2);
    await sh.send('customers/data_request', {
      shop_domain: sh.domain,
      customer: { id: 99, email: 'ann@example.com' },
      orders_requested: [],
      data_request: { id: 7 },
    });
    const exported = JSON.parse((await s.app.db.dataExport.findFirstOrThrow({ where: { shopId: sh.shopId } })).content);
    expect(exported.storefront.product_interests.map((i: { variant_id: string }) => i.variant_id).sort()).toEqual(['45101', '45105']);
    expect(
      exported.storefront.product_interests.find((i: { variant_id: string }) => i.variant_id === '45105').seen_sold_out_at,
    ).not.toBeNull();
    await sh.send('customers/redact', { shop_domain: sh.domain, customer: { id: 99, email: 'ann@example.com' }, orders_to_redact: [] });
    expect(await s.app.db.productInterest.count({ where: { shopId: sh.shopId } })).toBe(0);
  });
});
