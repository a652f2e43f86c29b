// Activating the storefront web pixel against the fake shop's Admin GraphQL, on a real database:
// create, update on reconnect, delete, missing scopes, userErrors, and the key kept throughout.
import request from 'supertest';
import type { GraphqlRequest } from '../../../sandbox/fake-shop';
import { createPermissions } from '../../../src/admin/permissions';
import { fetchGrantedScopes } from '../../../src/integrations/shopify/access-scopes';
import { createWebPixels, type WebPixels } from '../../../src/integrations/shopify/web-pixel';
import { expectNoSecrets, startHarness, type Harness } from './harness';

const SHOP = 'pixel-store.myshopify.com';
const BAD = 'bad-settings.myshopify.com';
const PIXEL_SCOPES = ['write_pixels', 'read_customer_events', 'read_products'];

describe('the storefront web pixel', () => {
  let h: Harness;
  let pixels: WebPixels;
  const seen: GraphqlRequest[] = [];
  const shops = new Map<string, { id: string; domain: string }>();
  const ops = (domain: string) =>
    seen
      .filter((r) => r.shop.domain === domain)
      .map(
        (r) =>
          /\b(webPixelCreate|webPixelUpdate|webPixelDelete)\s*\(/.exec(r.query)?.[1] ??
          (/\bwebPixel\s*\{/.test(r.query) ? 'webPixel' : 'other'),
      );
  const calls = (domain: string) => h.fake.tokenStats(domain).graphqlCalls;

  async function install(domain: string) {
    const res = await request(h.url)
      .get('/api/whoami')
      .set('Authorization', `Bearer ${h.fake.mintSessionToken(domain)}`);
    expect(res.status).toBe(200);
    shops.set(domain, res.body);
  }
  /** The merchant grants the pixel scopes; Shopify's app/scopes_update reaches the app. */
  async function grantPixelScopes(domain: string) {
    const permissions = createPermissions({
      db: h.db,
      tokens: h.tokens,
      grantedScopes: (s) => fetchGrantedScopes(h.shopify, s),
      logger: h.logger,
    });
    const result = await permissions.onScopesUpdate(domain, h.fake.grantScopes(domain, PIXEL_SCOPES));
    expect(result).toMatchObject({ updated: true, enabled: expect.arrayContaining(['storefront_pixel']) });
  }

  beforeAll(async () => {
    h = await startHarness({ shops: [{ domain: SHOP }, { domain: BAD }], encrypt: true });
    h.fake.addGraphqlHandler((req) => {
      seen.push(req);
      return undefined;
    });
    pixels = createWebPixels({ db: h.db, shopify: h.shopify, tokens: h.tokens, logger: h.logger });
    await install(SHOP);
    await install(BAD);
  });
  afterAll(async () => {
    await h.close();
  });

  let key: string;
  let pixelId: string;

  it('without write_pixels and read_customer_events: missing_scopes, a key, and no call', async () => {
    const before = calls(SHOP);
    const view = await pixels.ensureActive(shops.get(SHOP)!);
    expect(view).toMatchObject({ state: 'missing_scopes', web_pixel_id: null });
    expect(view.error).toContain('write_pixels and read_customer_events');
    expect(view.key).toMatch(/^[A-Za-z0-9_-]{32}$/); // 24 random bytes, base64url
    key = view.key!;
    expect(calls(SHOP)).toBe(before);
    expect(h.fake.webPixel(SHOP)).toBeNull();
  });

  it('once granted, creates the pixel with the key in its settings', async () => {
    await grantPixelScopes(SHOP);
    const view = await pixels.ensureActive(shops.get(SHOP)!);
    expect(view).toMatchObject({
      state: 'active',
      key,
      error: null,
      web_pixel_id: expect.stringMatching(/^gid:\/\/shopify\/WebPixel\/\d+$/),
    });
    pixelId = view.web_pixel_id!;
    expect(h.fake.webPixel(SHOP)).toEqual({ id: pixelId, settings: JSON.stringify({ pixelKey: key }) });
    expect(ops(SHOP).slice(-1)).toEqual(['webPixelCreate']);
    await expect(pixels.view(shops.get(SHOP)!.id)).resolves.toMatchObject({ state: 'active', key, web_pixel_id: pixelId });
    await expect(pixels.shopForKey(key)).resolves.toBe(shops.get(SHOP)!.id);
  });

  it('on reconnect, updates the same pixel with the same key', async () => {
    const before = ops(SHOP).length;
    const view = await pixels.ensureActive(shops.get(SHOP)!);
    expect(view).toMatchObject({ state: 'active', key, web_pixel_id: pixelId });
    expect(ops(SHOP).slice(before)).toEqual(['webPixelUpdate']);
  });

  it('markRemoved makes no call; a shop that still has the app\u2019s pixel is taken over: create says TAKEN, then update', async () => {
    const before = calls(SHOP);
    await pixels.markRemoved(shops.get(SHOP)!.id);
    expect(calls(SHOP)).toBe(before);
    await expect(pixels.view(shops.get(SHOP)!.id)).resolves.toMatchObject({ state: 'removed', key, web_pixel_id: null });
    await expect(pixels.shopForKey(key)).resolves.toBeNull();

    const opsBefore = ops(SHOP).length;
    const view = await pixels.ensureActive(shops.get(SHOP)!);
    expect(view).toMatchObject({ state: 'active', key, web_pixel_id: pixelId });
    expect(ops(SHOP).slice(opsBefore)).toEqual(['webPixelCreate', 'webPixel', 'webPixelUpdate']);
  });

  it('remove deletes the pixel at Shopify and keeps the key with state removed', async () => {
    const before = ops(SHOP).length;
    await pixels.remove(shops.get(SHOP)!);
    expect(ops(SHOP).slice(before)).toEqual(['webPixelDelete']);
    expect(h.fake.webPixel(SHOP)).toBeNull();
    await expect(pixels.view(shops.get(SHOP)!.id)).resolves.toMatchObject({ state: 'removed', key, web_pixel_id: null, error: null });
    await expect(pixels.shopForKey(key)).resolves.toBeNull();
  });

  it('a stored id Shopify no longer knows: update says NOT_FOUND, then create', async () => {
    await h.db.webPixel.update({ where: { shopId: shops.get(SHOP)!.id }, data: { webPixelId: 'gid://shopify/WebPixel/1' } });
    const before = ops(SHOP).length;
    const view = await pixels.ensureActive(shops.get(SHOP)!);
    expect(view).toMatchObject({ state: 'active', key });
    expect(view.web_pixel_id).not.toBe('gid://shopify/WebPixel/1');
    expect(ops(SHOP).slice(before)).toEqual(['webPixelUpdate', 'webPixelCreate']);
    expect(h.fake.webPixel(SHOP)?.settings).toBe(JSON.stringify({ pixelKey: key }));
  });

  it('Shopify denying access (scopes revoked, the app not told yet) becomes missing_scopes', async () => {
    h.fake.revokeScopes(SHOP, ['read_customer_events']);
    const view = await pixels.ensureActive(shops.get(SHOP)!);
    expect(view).toMatchObject({ state: 'missing_scopes', key });
    expect(view.error).toMatch(/denied access/);
  });

  it('userErrors become state error with Shopify\u2019s sentence', async () => {
    await grantPixelScopes(BAD);
    const blank = createWebPixels({ db: h.db, shopify: h.shopify, tokens: h.tokens, logger: h.logger, newKey: () => ' ' });
    const view = await blank.ensureActive(shops.get(BAD)!);
    expect(view.state).toBe('error');
    expect(view.error).toMatch(/^Shopify refused to activate the storefront pixel: .*\(INVALID_SETTINGS\)$/);
    expect(h.fake.webPixel(BAD)).toBeNull();
  });

  it('a Shopify outage becomes state error, and nothing secret reaches the row or the logs', async () => {
    h.fake.failNext('graphql', 503);
    const view = await pixels.ensureActive(shops.get(BAD)!);
    expect(view.state).toBe('error');
    expect(view.error).toContain('retry in a moment');
    const secrets = [SHOP, BAD].flatMap((d) => [h.fake.tokenStats(d).lastAccessToken, h.fake.tokenStats(d).lastRefreshToken]);
    expectNoSecrets(JSON.stringify(await h.db.webPixel.findMany()), secrets);
    expectNoSecrets(h.logText(), secrets);
  });
});
