import { startStack, type Stack } from '../helpers/stack';
import { testProvider } from '../helpers/db';

describe(`webhook to event, end to end (${testProvider})`, () => {
  let s: Stack;
  let ws: { apiKey: string; workspaceId: string; shopId: string };
  beforeAll(async () => {
    s = await startStack();
    ws = await s.connectShop();
  });
  afterAll(() => s.close());

  it('delivers orders/create as order_placed with the exact order id and rich attributes', async () => {
    const order = s.fixture('orders-create');
    const res = await s.webhook('orders/create', s.raw('orders-create'), { webhookId: 'wh-order-1' });
    expect(res.status).toBe(200);
    const [event] = await s.until(
      () =>
        s.emulator
          .events({ workspaceId: ws.workspaceId, eventName: 'order_placed' })
          .filter((e) => e.event_attribute.source_id === 'wh-order-1'),
      5000,
      'order_placed',
    );
    expect(event!.email).toBe(String(order.email).toLowerCase());
    expect(event!.event_attribute).toMatchObject({
      shop_domain: 'demo-store.myshopify.com',
      source_id: 'wh-order-1',
      order_id: '820982911946154508',
    });
    expect(typeof event!.event_attribute.total_price).toBe('number');
    // the service has it; our record follows once the response is processed
    const logged = await s.until(
      async () =>
        (await s.api('GET', '/api/deliveries?status=delivered')).body.deliveries.find((d: any) => d.event_name === 'order_placed'),
      5000,
      'delivery recorded',
    );
    expect(logged).toMatchObject({ status: 'delivered', attempts: 1, topic: 'orders/create' });
  });

  it('answers a repeated webhook id with 200 and sends one event', async () => {
    const order = { ...s.fixture('orders-paid') };
    for (let i = 0; i < 3; i++) expect((await s.webhook('orders/paid', order, { webhookId: 'wh-dup' })).status).toBe(200);
    await s.until(() => s.emulator.events({ eventName: 'order_paid' }).length >= 1, 5000);
    await new Promise((r) => setTimeout(r, 300));
    expect(s.emulator.events({ eventName: 'order_paid' }).filter((e) => e.event_attribute.source_id === 'wh-dup')).toHaveLength(1);
  });

  it('rejects a bad HMAC with 401 and stores nothing', async () => {
    const before = await s.app.db.webhookReceipt.count();
    const res = await s.shop.sendWebhook(s.app.url, {
      topic: 'orders/create',
      shopDomain: 'demo-store.myshopify.com',
      payload: { id: 1 },
      hmac: 'bm90LXRoZS1obWFj',
    });
    expect(res.status).toBe(401);
    const missing = await s.shop.sendWebhook(s.app.url, {
      topic: 'orders/create',
      shopDomain: 'demo-store.myshopify.com',
      payload: { id: 1 },
      hmac: '',
    });
    expect(missing.status).toBe(401);
    expect(await s.app.db.webhookReceipt.count()).toBe(before);
  });

  it('answers 400 to a signed body that is not JSON, and 413 over 5 MB', async () => {
    expect(
      (await s.shop.sendWebhook(s.app.url, { topic: 'orders/create', shopDomain: 'demo-store.myshopify.com', payload: '{not json' }))
        .status,
    ).toBe(400);
    const huge = JSON.stringify({ note: 'x'.repeat(5 * 1024 * 1024 + 10) });
    expect(
      (await s.shop.sendWebhook(s.app.url, { topic: 'orders/create', shopDomain: 'demo-store.myshopify.com', payload: huge })).status,
    ).toBe(413);
  });

  it('records a webhook for a shop without a connection as ignored', async () => {
    const res = await s.webhook('orders/create', s.fixture('orders-create'), {
      webhookId: 'wh-stranger',
      domain: 'stranger.myshopify.com',
    });
    expect(res.status).toBe(200);
    const receipt = await s.app.db.webhookReceipt.findUniqueOrThrow({ where: { webhookId: 'wh-stranger' } });
    expect(receipt).toMatchObject({ outcome: 'ignored', reason: 'shop not connected' });
  });

  it('sends a test event through the whole pipeline and shows its result', async () => {
    const res = await s.api('POST', '/api/test-event', { email: 'merchant@example.com' });
    expect(res.status).toBe(202);
    const id = res.body.delivery_id;
    const done = await s.until(
      async () => {
        const d = await s.api('GET', `/api/deliveries/${id}`);
        return d.body.status === 'delivered' ? d.body : null;
      },
      5000,
      'test event delivered',
    );
    expect(done.attempt_log).toEqual([expect.objectContaining({ outcome: 'ok', status_code: 200 })]);
    expect(s.emulator.events({ eventName: 'connector_test', email: 'merchant@example.com' })).toHaveLength(1);
  });

  it('reports stats for the shop', async () => {
    const res = await s.api('GET', '/api/stats');
    expect(res.status).toBe(200);
    expect(res.body.delivered_24h).toBeGreaterThanOrEqual(3);
    expect(res.body.p50_latency_ms).toEqual(expect.any(Number));
    expect(res.body.hourly).toHaveLength(24);
    expect(res.body.hourly.reduce((n: number, h: any) => n + h.delivered, 0)).toBe(res.body.delivered_24h);
  });
});
