// The page's routes without a browser: what `/` carries in each mode, the catalog, the static
// files, and the sandbox-only /_dev/* routes, which must not exist in production.
import express from 'express';
import request from 'supertest';
import { loadConfig, SANDBOX_DEFAULTS, type Config } from '../../src/config';
import { createDevSessionMinter } from '../../src/http/dev-session';
import { APP_BRIDGE_SRC, uiRoutes, type UiRoutesDeps } from '../../src/http/ui.routes';
import { EVENT_TABLE, PRODUCT_ALERT_EVENT_TABLE, STOREFRONT_EVENT_TABLE } from '../../src/mapping';
import { createLogger } from '../../src/observability/logger';
import { EVENT_NAMES } from '../../src/settings/settings';
import { createShopify } from '../../src/integrations/shopify/api';
import { startServer } from '../../src/app/server';
import { testConfig } from '../helpers/config';
import { createTestDatabase } from '../helpers/db';

const productionConfig = (): Config =>
  loadConfig({
    NODE_ENV: 'production',
    DATABASE_URL: 'file:./unused.db',
    SHOPIFY_API_KEY: 'prod-client-id',
    SHOPIFY_API_SECRET: 'prod-client-secret-0123456789',
    SHOPIFY_APP_URL: 'https://connector.example.com',
    SERVICE_BASE_URL: 'https://service.example.com',
    ENCRYPTION_KEY: SANDBOX_DEFAULTS.ENCRYPTION_KEY,
  });
const sandboxConfig = () =>
  testConfig('file:./unused.db', { SHOPIFY_API_KEY: 'dev-client-id', SHOPIFY_API_SECRET: 'dev-client-secret-0123456789' });

function appWith(deps: UiRoutesDeps) {
  const app = express();
  app.use(uiRoutes(deps));
  return app;
}

describe('the admin page routes in production', () => {
  const config = productionConfig();
  // Even handed every sandbox helper, a production config registers none of them.
  const app = appWith({ config, mintDevSessionToken: () => 'should-never-be-served', simulate: async () => ({ status: 200 }) });

  it('has no dev session token or simulate route: both 404', async () => {
    expect((await request(app).get('/_dev/session-token?shop=demo-store.myshopify.com')).status).toBe(404);
    expect((await request(app).post('/_dev/simulate').send({ topic: 'orders/create' })).status).toBe(404);
  });

  it('refuses to build a dev token minter from a production config', () => {
    expect(() => createDevSessionMinter(config)).toThrow(/only in sandbox/);
  });

  it('serves the page with App Bridge first, the public API key, and no sandbox hints', async () => {
    const res = await request(app).get('/?shop=my-shop.myshopify.com&host=abc&embedded=1');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.text).toContain(`<meta name="shopify-api-key" content="prod-client-id">`);
    expect(res.text).toContain(`<script src="${APP_BRIDGE_SRC}"></script>`);
    expect(res.text.indexOf(APP_BRIDGE_SRC)).toBeLessThan(res.text.indexOf('<script type="module"'));
    expect(res.text).toContain('<meta name="app-auth" content="app-bridge">');
    expect(res.text).not.toMatch(/app-dev-shop|app-simulate|_dev\//);
    expect(res.text).not.toContain(config.shopify.apiSecret);
  });

  it('lets only the shop and Shopify admin frame the page', async () => {
    const ok = await request(app).get('/?shop=my-shop.myshopify.com');
    expect(ok.headers['content-security-policy']).toBe('frame-ancestors https://my-shop.myshopify.com https://admin.shopify.com');
    const odd = await request(app).get('/?shop=evil.example.com');
    expect(odd.headers['content-security-policy']).toBe('frame-ancestors https://admin.shopify.com');
  });

  it('serves a catalog built from the contract table, without sandbox settings', async () => {
    const res = await request(app).get('/ui/catalog.json');
    expect(res.status).toBe(200);
    expect(res.body.sandbox).toBeNull();
    expect(res.body.events.map((e: { name: string }) => e.name)).toEqual(EVENT_NAMES);
    const placed = res.body.events.find((e: { name: string }) => e.name === 'order_placed');
    expect(placed).toEqual({ name: 'order_placed', topics: ['orders/create'], default_on: true });
    for (const e of res.body.events) {
      for (const topic of e.topics)
        expect({ ...EVENT_TABLE, ...STOREFRONT_EVENT_TABLE, ...PRODUCT_ALERT_EVENT_TABLE }[topic as keyof typeof EVENT_TABLE]).toContain(
          e.name,
        );
    }
  });

  it('serves the static files with their types, and a JSON 404 for unknown ones', async () => {
    const js = await request(app).get('/ui/js/main.js');
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toMatch(/javascript/);
    const css = await request(app).get('/ui/app.css');
    expect(css.headers['content-type']).toMatch(/text\/css/);
    const missing = await request(app).get('/ui/js/nope.js');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: { code: 'not_found', message: 'No such file' } });
    expect((await request(app).get('/ui/../index.html')).text).not.toContain('<!-- app:head -->');
  });
});

describe('the admin page routes in sandbox mode', () => {
  const config = sandboxConfig();
  const simulated: Array<[string, string]> = [];
  const app = appWith({
    config,
    mintDevSessionToken: createDevSessionMinter(config),
    simulate: async (topic, shop) => {
      simulated.push([topic, shop]);
      if (topic === 'customers/create') throw new Error('fake shop is down');
      return { status: 200, headers: { 'X-Shopify-Hmac-Sha256': 'not-for-the-page' } };
    },
    simulateTopics: ['orders/create', 'customers/create'],
    sandboxLinks: [{ label: 'Emulator events', href: 'http://127.0.0.1:4010/_sandbox/events' }],
    notifyMePreview: { label: 'a sold-out product', href: 'http://127.0.0.1:4011/products/merino-socks?variant=45105' },
  });

  it('mints a session token the app itself accepts: HS256, aud = API key, dest = the shop', async () => {
    const res = await request(app).get('/_dev/session-token?shop=demo-store.myshopify.com');
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toMatchObject({ shop: 'demo-store.myshopify.com', expires_in: 60 });
    const shopify = createShopify(config, createLogger('silent'));
    const payload = await shopify.session.decodeSessionToken(res.body.token);
    expect(payload).toMatchObject({
      aud: 'dev-client-id',
      dest: 'https://demo-store.myshopify.com',
      iss: 'https://demo-store.myshopify.com/admin',
    });
  });

  it('refuses a shop that is not a myshopify.com domain', async () => {
    const res = await request(app).get('/_dev/session-token?shop=evil.example.com');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_shop');
  });

  it('serves the page without App Bridge, naming the simulated shop', async () => {
    const res = await request(app).get('/');
    expect(res.text).toContain('<meta name="app-auth" content="dev">');
    expect(res.text).toContain('<meta name="app-dev-shop" content="demo-store.myshopify.com">');
    expect(res.text).toContain('<meta name="app-simulate" content="on">');
    expect(res.text).not.toContain(APP_BRIDGE_SRC);
    const catalog = (await request(app).get('/ui/catalog.json')).body;
    expect(catalog.sandbox).toEqual({
      simulate_topics: ['orders/create', 'customers/create'],
      links: [{ label: 'Emulator events', href: 'http://127.0.0.1:4010/_sandbox/events' }],
      notify_me_preview: { label: 'a sold-out product', href: 'http://127.0.0.1:4011/products/merino-socks?variant=45105' },
    });
  });

  it('simulates a webhook, answering only its status', async () => {
    const res = await request(app).post('/_dev/simulate').send({ topic: 'orders/create' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ topic: 'orders/create', webhook_status: 200 });
    expect(simulated.at(-1)).toEqual(['orders/create', 'demo-store.myshopify.com']);
  });

  it('refuses an unknown topic, and reports a failing simulated shop as 502', async () => {
    const bad = await request(app).post('/_dev/simulate').send({ topic: 'shop/redact' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_topic');
    const down = await request(app).post('/_dev/simulate').send({ topic: 'customers/create' });
    expect(down.status).toBe(502);
    expect(down.body.error).toMatchObject({ code: 'simulate_failed' });
  });

  it('without a minter, registers no /_dev route and serves the App Bridge page', async () => {
    const plain = appWith({ config, simulate: async () => ({ status: 200 }) });
    expect((await request(plain).get('/_dev/session-token')).status).toBe(404);
    expect((await request(plain).post('/_dev/simulate').send({ topic: 'orders/create' })).status).toBe(404);
    expect((await request(plain).get('/')).text).toContain(APP_BRIDGE_SRC);
  });
});

describe('the whole server started with a production config', () => {
  it('serves the App Bridge page and has no /_dev route, whatever the sandbox extras say', async () => {
    const database = await createTestDatabase();
    const config = loadConfig({
      NODE_ENV: 'production',
      PORT: '0',
      DATABASE_URL: database.url,
      ROLE: 'web',
      LOG_LEVEL: 'error',
      SHOPIFY_API_KEY: 'prod-client-id',
      SHOPIFY_API_SECRET: 'prod-client-secret-0123456789',
      SHOPIFY_APP_URL: 'https://connector.example.com',
      SERVICE_BASE_URL: 'https://service.example.com',
      ENCRYPTION_KEY: SANDBOX_DEFAULTS.ENCRYPTION_KEY,
    });
    const app = await startServer(config, {
      logger: createLogger('silent'),
      host: '127.0.0.1',
      ui: {
        mintDevSessionToken: () => 'never',
        simulate: async () => ({ status: 200 }),
        notifyMePreview: { label: 'a sold-out product', href: 'http://127.0.0.1:4011/products/merino-socks' },
      },
    });
    try {
      expect((await fetch(`${app.url}/_dev/session-token?shop=demo-store.myshopify.com`)).status).toBe(404);
      expect(
        (
          await fetch(`${app.url}/_dev/simulate`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{"topic":"orders/create"}',
          })
        ).status,
      ).toBe(404);
      const page = await (await fetch(`${app.url}/?shop=my-shop.myshopify.com`)).text();
      expect(page).toContain(APP_BRIDGE_SRC);
      expect(page).toContain('<meta name="app-auth" content="app-bridge">');
      // the back-in-stock card links to Shopify's theme editor, never to a sandbox page
      expect((await (await fetch(`${app.url}/ui/catalog.json`)).json()).sandbox).toBeNull();
    } finally {
      await app.close();
      await database.drop();
    }
  });
});
