// Optional scopes: what the stored offline session grants, app/scopes_update keeping it in step,
// the /api/permissions and /api/pixel routes, and the sandbox's "Grant access" through the fake
// shop, which (like Shopify) signs and sends app/scopes_update.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import request from 'supertest';
import { DEFAULT_SCOPES } from '../../../src/config';
import { createDevSessionMinter } from '../../../src/http/dev-session';
import { createApp } from '../../../src/http/app';
import { permissionsRoutes } from '../../../src/http/permissions.routes';
import { sessionTokenMiddleware } from '../../../src/http/session-token';
import { uiRoutes } from '../../../src/http/ui.routes';
import { Metrics } from '../../../src/observability/metrics';
import { fetchGrantedScopes } from '../../../src/integrations/shopify/access-scopes';
import { storefrontActivity } from '../../../src/admin/storefront-activity';
import { createWebPixels } from '../../../src/integrations/shopify/web-pixel';
import { createPermissions, type PermissionsUseCases } from '../../../src/admin/permissions';
import { testConfig } from '../../helpers/config';
import { API_KEY, API_SECRET, startHarness, type Harness } from './harness';

const SHOP = 'perm-store.myshopify.com';
const OTHER = 'perm-other.myshopify.com';
// The scopes every install asks for (the fake shop grants them at install, as Shopify does).
const BASE = DEFAULT_SCOPES.split(',');

describe('permissions (optional scopes)', () => {
  let h: Harness;
  let permissions: PermissionsUseCases;
  let api: Server;
  let apiUrl: string;
  const webhooks: Array<{ topic: string; status: number }> = [];

  beforeAll(async () => {
    h = await startHarness({ shops: [{ domain: SHOP }, { domain: OTHER }], encrypt: true });
    permissions = createPermissions({
      db: h.db,
      tokens: h.tokens,
      grantedScopes: (s) => fetchGrantedScopes(h.shopify, s),
      logger: h.logger,
    });
    const webPixels = createWebPixels({ db: h.db, shopify: h.shopify, tokens: h.tokens, logger: h.logger });
    const auth = sessionTokenMiddleware({ shopify: h.shopify, db: h.db, tokens: h.tokens, logger: h.logger });
    // app/scopes_update as the composition root is expected to route it: HMAC-verified, then the use case
    const hooks = express.Router();
    hooks.post('/webhooks', express.text({ type: '*/*' }), async (req, res) => {
      const check = await h.shopify.webhooks.validate({ rawBody: req.body as string, rawRequest: req, rawResponse: res });
      if (!check.valid) return res.status(401).end();
      webhooks.push({ topic: check.topic, status: 200 });
      if (check.topic === 'APP_SCOPES_UPDATE') await permissions.onScopesUpdate(check.domain, JSON.parse(req.body as string));
      res.status(200).end();
    });
    const app = createApp({
      db: h.db,
      logger: h.logger,
      metrics: new Metrics(),
      rawRouters: [hooks],
      routers: [
        permissionsRoutes({ auth, permissions, webPixels, storefrontActivity: (shopId) => storefrontActivity(h.db, shopId, new Date()) }),
      ],
    });
    api = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => {
      api.close(() => resolve());
      api.closeAllConnections();
    });
    await h.close();
  });

  const call = (method: 'get' | 'post', path: string, shop = SHOP) => {
    const agent = request(apiUrl);
    return (method === 'get' ? agent.get(path) : agent.post(path)).set('Authorization', `Bearer ${h.fake.mintSessionToken(shop)}`);
  };

  it('GET /api/permissions installs the shop and lists the features, none granted yet', async () => {
    const res = await call('get', '/api/permissions');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      granted: BASE,
      features: [
        { feature: 'product_images', scopes: ['read_products'], granted: false, missing: ['read_products'] },
        {
          feature: 'storefront_pixel',
          scopes: ['write_pixels', 'read_customer_events', 'read_products'],
          granted: false,
          missing: ['write_pixels', 'read_customer_events', 'read_products'],
        },
      ],
    });
    expect((await request(apiUrl).get('/api/permissions')).status).toBe(401);
  });

  it('app/scopes_update stores the new scope on the offline session, and only the scope', async () => {
    const before = (await h.sessions.loadSession(`offline_${SHOP}`))!;
    const result = await permissions.onScopesUpdate(SHOP, h.fake.grantScopes(SHOP, ['read_products']));
    expect(result).toEqual({ updated: true, granted: [...BASE, 'read_products'], enabled: ['product_images'], disabled: [] });
    const after = (await h.sessions.loadSession(`offline_${SHOP}`))!;
    expect(after.scope).toBe([...BASE, 'read_products'].join(','));
    expect(after.accessToken).toBe(before.accessToken);
    expect(after.refreshToken).toBe(before.refreshToken);
    const view = await permissions.get({ domain: SHOP });
    expect(view.features.map((f) => [f.feature, f.granted])).toEqual([
      ['product_images', true],
      ['storefront_pixel', false],
    ]);

    // a revocation turns the feature off again
    const revoked = await permissions.onScopesUpdate(SHOP, h.fake.revokeScopes(SHOP, ['read_products']));
    expect(revoked).toMatchObject({ updated: true, enabled: [], disabled: ['product_images'] });
  });

  it('ignores a malformed payload and a shop without a stored session', async () => {
    await expect(permissions.onScopesUpdate(SHOP, { current: 'read_products' })).resolves.toMatchObject({ updated: false });
    await expect(permissions.onScopesUpdate('not a shop', { current: [] })).resolves.toMatchObject({ updated: false });
    await expect(
      permissions.onScopesUpdate('never-installed.myshopify.com', {
        id: 1,
        previous: [],
        current: ['read_products'],
        updated_at: '2026-01-01T00:00:00Z',
      }),
    ).resolves.toEqual({
      updated: false,
      granted: ['read_products'],
      enabled: [],
      disabled: [],
    });
    expect((await h.sessions.loadSession(`offline_${SHOP}`))!.scope).toBe(BASE.join(','));
  });

  it('?refresh=1 reads the granted scopes from Shopify when the webhook has not arrived yet', async () => {
    h.fake.grantScopes(SHOP, ['write_pixels', 'read_customer_events', 'read_products']); // no webhook sent
    expect((await call('get', '/api/permissions')).body.features[1].granted).toBe(false);
    const res = await call('get', '/api/permissions?refresh=1');
    expect(res.status).toBe(200);
    expect(res.body.features[1]).toEqual({
      feature: 'storefront_pixel',
      scopes: ['write_pixels', 'read_customer_events', 'read_products'],
      granted: true,
      missing: [],
    });
    expect((await h.sessions.loadSession(`offline_${SHOP}`))!.scope).toBe(
      [...BASE, 'write_pixels', 'read_customer_events', 'read_products'].join(','),
    );
    expect((await call('get', '/api/permissions?refresh=maybe')).status).toBe(400);
  });

  it('?refresh=1 answers 502 when Shopify cannot be asked', async () => {
    h.fake.failNext('graphql', 503);
    const res = await call('get', '/api/permissions?refresh=1');
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('shopify_unavailable');
  });

  it('POST /api/pixel/activate activates the storefront pixel; GET /api/pixel shows it', async () => {
    const activity = {
      window_hours: 24,
      claims_pending: 0,
      claims_vouched: 0,
      claims_expired: 0,
      products_dropped: 0,
      products_waiting: 0,
      products_expired: 0,
      events_limited: 0,
    };
    expect((await call('get', '/api/pixel')).body).toEqual({
      state: 'none',
      key: null,
      web_pixel_id: null,
      error: null,
      updated_at: null,
      activity,
    });
    const res = await call('post', '/api/pixel/activate');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'active', key: expect.any(String), web_pixel_id: expect.any(String) });
    expect(h.fake.webPixel(SHOP)!.settings).toBe(JSON.stringify({ pixelKey: res.body.key }));
    expect((await call('get', '/api/pixel')).body).toMatchObject({ state: 'active', key: res.body.key, activity });
  });

  it('in sandbox, "Grant access" has the simulated shop grant the scopes and send a signed app/scopes_update', async () => {
    await call('get', '/api/permissions', OTHER); // installs OTHER
    const config = testConfig('file:unused.db', { SHOPIFY_API_KEY: API_KEY, SHOPIFY_API_SECRET: API_SECRET });
    const page = express();
    page.use(
      uiRoutes({
        config,
        mintDevSessionToken: createDevSessionMinter(config),
        devShop: OTHER,
        grantScopes: (shop, scopes) =>
          h.fake.sendWebhook(apiUrl, { topic: 'app/scopes_update', shopDomain: shop, payload: h.fake.grantScopes(shop, scopes) }),
      }),
    );
    expect((await request(page).get('/ui/catalog.json')).body.sandbox).toMatchObject({ grant_scopes: true });
    const bad = await request(page)
      .post('/_dev/grant-scopes')
      .send({ scopes: ['write_orders'] });
    expect(bad.status).toBe(400);
    expect(h.fake.grantedScopes(OTHER)).toEqual(BASE);

    const res = await request(page)
      .post('/_dev/grant-scopes')
      .send({ scopes: ['read_products'] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ granted: ['read_products'], webhook_status: 200 });
    expect(webhooks.slice(-1)).toEqual([{ topic: 'APP_SCOPES_UPDATE', status: 200 }]);
    const view = (await call('get', '/api/permissions', OTHER)).body;
    expect(view.granted).toEqual([...BASE, 'read_products']);
    expect(view.features[0].granted).toBe(true);
  });

  it('in production the sandbox grant route does not exist', async () => {
    const production = testConfig('file:unused.db', {
      NODE_ENV: 'production',
      SHOPIFY_API_KEY: API_KEY,
      SHOPIFY_API_SECRET: API_SECRET,
      SHOPIFY_APP_URL: 'https://connector.example.com',
      SERVICE_BASE_URL: 'https://service.example.com',
      ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    const page = express();
    page.use(uiRoutes({ config: production, mintDevSessionToken: () => 'x', grantScopes: async () => ({ status: 200 }) }));
    expect(
      (
        await request(page)
          .post('/_dev/grant-scopes')
          .send({ scopes: ['read_products'] })
      ).status,
    ).toBe(404);
    expect((await request(page).get('/ui/catalog.json')).body.sandbox).toBeNull();
  });
});
