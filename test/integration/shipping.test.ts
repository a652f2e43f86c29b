// Shipping lifecycle and product images through the whole pipeline: webhooks → stage 2 (stored
// order summaries and fulfillment state, product lookups) → the service. Repeats and
// out-of-order events send each (fulfillment, status) once; redaction erases what is stored.
import { sampleFulfillment, sampleFulfillmentEvent, sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { tablesContaining } from '../helpers/rows';
import { startStack, type Stack } from '../helpers/stack';

const SHOP = 'ship-store.myshopify.com';

describe(`shipping events and product images (${testProvider})`, () => {
  let s: Stack;
  let workspaceId: string;
  const events = (name?: string) => s.emulator.events({ workspaceId, ...(name ? { eventName: name } : {}) });
  const send = (topic: string, payload: unknown, webhookId: string) => s.webhook(topic, payload, { domain: SHOP, webhookId });

  beforeAll(async () => {
    s = await startStack();
    s.shop.addShop({ domain: SHOP, id: '700555', name: 'Ship Store' });
    // granted before the install: the offline token carries read_products
    s.shop.grantScopes(SHOP, ['read_products']);
    ({ workspaceId } = await s.connectShop(SHOP));
  });
  afterAll(() => s.close());

  it('orders carry each line item’s image, link and handle, looked up once and then cached', async () => {
    const calls = () => s.shop.tokenStats(SHOP).graphqlCalls;
    const before = calls();
    await send('orders/create', sampleOrder(1), 'ship-order-1');
    const [placed] = await s.until(() => events('order_placed'), 5000, 'order_placed');
    const items = placed!.event_attribute.line_items as Array<Record<string, unknown>>;
    expect(items.length).toBeGreaterThan(0);
    for (const item of items) {
      expect(item.image_url).toEqual(expect.stringMatching(/^(https?:|data:)/));
      expect(item.product_url).toBe(`https://${SHOP}/products/${String(item.product_handle)}`);
    }
    const afterFirst = calls();
    expect(afterFirst).toBeGreaterThan(before);
    // the same products again: answered from the cache, no Admin API call
    await send('orders/paid', sampleOrder(1), 'ship-order-1-paid');
    await s.until(() => events('order_paid'), 5000, 'order_paid');
    expect(calls()).toBe(afterFirst);
  });

  it('sends order_shipped with tracking to the stored order’s email, then each status once whatever the order of arrival', async () => {
    const order = sampleOrder(1);
    // Shopify's fulfillment payload often has no email: it comes from the stored order summary
    const fulfillment = { ...sampleFulfillment(1, { order: 1 }), email: null };
    await send('fulfillments/create', fulfillment, 'ship-f-create');
    const [shipped] = await s.until(() => events('order_shipped'), 5000, 'order_shipped');
    expect(shipped!.email).toBe(order.email);
    expect(shipped!.event_attribute).toMatchObject({
      order_id: String(order.id),
      order_name: order.name,
      fulfillment_id: String(fulfillment.id),
      tracking_numbers: [expect.any(String)],
      tracking_urls: [expect.stringContaining('ups.com')],
    });
    expect((shipped!.event_attribute.line_items as Array<Record<string, unknown>>)[0]?.image_url).toEqual(expect.any(String));

    // delivered arrives before out_for_delivery, and Shopify repeats itself
    await send('fulfillment_events/create', sampleFulfillmentEvent(1, 'delivered', { order: 1 }), 'ship-e-delivered');
    await send('fulfillment_events/create', sampleFulfillmentEvent(1, 'out_for_delivery', { order: 1 }), 'ship-e-ofd');
    await send('fulfillment_events/create', sampleFulfillmentEvent(1, 'delivered', { order: 1 }), 'ship-e-delivered-again');
    await send('fulfillments/create', fulfillment, 'ship-f-create-again');
    await s.until(() => events('shipment_delivered'), 5000, 'shipment_delivered');
    await new Promise((r) => setTimeout(r, 300));
    expect(
      events()
        .map((e) => e.event_name)
        .filter((n) => n.startsWith('shipment') || n === 'order_shipped')
        .sort(),
    ).toEqual(['order_shipped', 'shipment_delivered']);
    const receipt = await s.app.db.webhookReceipt.findUniqueOrThrow({ where: { webhookId: 'ship-e-ofd' } });
    expect(receipt.outcome).toBe('ignored');
  });

  it('customers/redact erases the stored order summary and shipping state with the rest', async () => {
    const order = sampleOrder(1);
    expect(await tablesContaining(s.app.db, order.email)).toEqual(expect.arrayContaining(['OrderSummary', 'FulfillmentState']));
    await send(
      'customers/redact',
      { shop_id: 1, shop_domain: SHOP, customer: { id: order.customer.id, email: order.email, phone: null }, orders_to_redact: [order.id] },
      'ship-redact',
    );
    await s.until(
      async () => (await s.app.db.outboxMessage.count({ where: { kind: 'contact_delete', status: 'delivered' } })) === 1,
      5000,
      'contact deleted',
    );
    expect(await tablesContaining(s.app.db, order.email)).toEqual([]);
    expect(await s.app.db.orderSummary.count({ where: { orderId: String(order.id) } })).toBe(0);
    expect(await s.app.db.fulfillmentState.count()).toBe(0);
  });
});
