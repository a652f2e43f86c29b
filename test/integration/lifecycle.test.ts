import { sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { spawnApp } from '../helpers/process';
import { startStack, type Stack } from '../helpers/stack';

describe(`shop lifecycle and data requests (${testProvider})`, () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(() => s.close());

  it('deliveries held by an uninstall go out again when the shop reinstalls', async () => {
    const ws = await s.connectShop('reinstall.myshopify.com');
    await s.app.worker.stop();
    await s.webhook('orders/create', sampleOrder(1), { domain: 'reinstall.myshopify.com', webhookId: 'ri-1' });
    await s.webhook(
      'app/uninstalled',
      { id: 1, domain: 'reinstall.myshopify.com' },
      { domain: 'reinstall.myshopify.com', webhookId: 'ri-un' },
    );
    expect(await s.app.db.outboxMessage.findFirstOrThrow({ where: { sourceId: 'ri-1' } })).toMatchObject({
      status: 'held',
      heldReason: 'uninstalled',
    });
    // a webhook after uninstall is ignored, not queued
    await s.webhook('orders/create', sampleOrder(2), { domain: 'reinstall.myshopify.com', webhookId: 'ri-2' });
    expect(await s.app.db.webhookReceipt.findUniqueOrThrow({ where: { webhookId: 'ri-2' } })).toMatchObject({
      outcome: 'ignored',
      reason: 'app uninstalled',
    });
    s.app.worker.start();
    // the merchant opens the app again: token exchange reinstalls
    expect((await s.api('GET', '/api/connection', undefined, 'reinstall.myshopify.com')).body.status).toBe('connected');
    await s.until(
      () => s.emulator.events({ workspaceId: ws.workspaceId }).filter((e) => e.event_attribute.source_id === 'ri-1'),
      5000,
      'resumed after reinstall',
    );
  });

  it('answers customers/data_request with an export retrievable from the admin API', async () => {
    await s.connectShop('export.myshopify.com');
    const order = sampleOrder(77);
    await s.webhook('orders/create', order, { domain: 'export.myshopify.com', webhookId: 'ex-1' });
    const res = await s.webhook(
      'customers/data_request',
      {
        shop_id: 1,
        shop_domain: 'export.myshopify.com',
        customer: { id: order.customer.id, email: order.email, phone: null },
        orders_requested: [order.id],
        data_request: { id: 9001 },
      },
      { domain: 'export.myshopify.com', webhookId: 'ex-req' },
    );
    expect(res.status).toBe(200);
    const list = await s.api('GET', '/api/data-requests', undefined, 'export.myshopify.com');
    expect(list.body.data_requests).toEqual([expect.objectContaining({ request_id: '9001', customer_id: String(order.customer.id) })]);
    const exp = await s.api('GET', `/api/data-requests/${list.body.data_requests[0].id}`, undefined, 'export.myshopify.com');
    expect(exp.body.customer).toEqual({ id: String(order.customer.id), email: order.email, known_emails: [order.email] });
    expect(exp.body.events.map((e: any) => e.event_name)).toEqual(['order_placed']);
    // another shop cannot read it
    await s.connectShop('other.myshopify.com');
    expect((await s.api('GET', `/api/data-requests/${list.body.data_requests[0].id}`, undefined, 'other.myshopify.com')).status).toBe(404);
  });
});

describe('start-up', () => {
  it('with NODE_ENV=production and no SHOPIFY_API_SECRET exits non-zero with one line naming it', async () => {
    const { spawnSync } = await import('node:child_process');
    const path = await import('node:path');
    const res = spawnSync(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', '..', 'src', 'main.ts')], {
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'production',
        SHOPIFY_API_KEY: 'id',
        SHOPIFY_APP_URL: 'https://a.example.com',
        SERVICE_BASE_URL: 'https://s.example.com',
        ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
      },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(res.status).toBe(1);
    expect(res.stderr.trim().split('\n')).toEqual(['config error: SHOPIFY_API_SECRET is required']);
    expect(res.stdout).toBe('');
  });

  it('without NODE_ENV=production or SANDBOX, a missing ENCRYPTION_KEY stops start-up too: no published key is ever used', async () => {
    const { spawnSync } = await import('node:child_process');
    const path = await import('node:path');
    const os = await import('node:os');
    const res = spawnSync(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', '..', 'src', 'main.ts')], {
      // a throwaway database: should it start (this test failing), it touches nothing in the checkout
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'development',
        PORT: '0',
        DATABASE_URL: `file:${path.join(os.tmpdir(), `never-${process.pid}.db`)}`,
        SHOPIFY_API_KEY: 'id',
        SHOPIFY_API_SECRET: 'secret',
        SHOPIFY_APP_URL: 'https://a.example.com',
        SERVICE_BASE_URL: 'https://s.example.com',
      },
      encoding: 'utf8',
      timeout: 20_000,
      killSignal: 'SIGKILL',
    });
    expect(res.status).toBe(1);
    expect(res.stderr.trim().split('\n')).toEqual(['config error: ENCRYPTION_KEY is required (set SANDBOX=1 for the sandbox defaults)']);
    expect(res.stdout).toBe('');
  });

  it('shuts down gracefully on SIGTERM with exit code 0', async () => {
    const { createTestDatabase } = await import('../helpers/db');
    const db = await createTestDatabase();
    const app = await spawnApp({ DATABASE_URL: db.url });
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    expect(await app.kill('SIGTERM')).toBe(0);
    await db.drop();
  });
});
