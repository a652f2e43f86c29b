import request from 'supertest';
import { createSessionStore } from '../../../src/integrations/shopify/session-storage';
import { API_SECRET, expectNoSecrets, startHarness, testCipher, type Harness } from './harness';

const SHOP = 'embedded-store.myshopify.com';

describe('embedded install by token exchange', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ shops: [{ domain: SHOP, id: '548380009', name: 'Embedded Store' }], encrypt: true });
  });
  afterAll(async () => {
    await h.close();
  });

  it("a shop's first authenticated request exchanges its session token and records the install", async () => {
    const jwt = h.fake.mintSessionToken(SHOP);
    const res = await request(h.url).get('/api/whoami').set('Authorization', `Bearer ${jwt}`);
    expect(res.status).toBe(200);

    const shop = await h.db.shop.findUniqueOrThrow({ where: { domain: SHOP } });
    expect(res.body).toEqual({ id: shop.id, domain: SHOP });
    expect(shop).toMatchObject({
      shopifyId: '548380009',
      name: 'Embedded Store',
      tokenStatus: 'active',
      tokenError: null,
      uninstalledAt: null,
    });
    expect(h.fake.tokenStats(SHOP)).toMatchObject({ exchanges: 1, accessTokensIssued: 1, graphqlCalls: 1 });

    const session = await h.tokens.getOfflineSession(SHOP);
    expect(session).not.toBeNull();
    expect(session!.id).toBe(`offline_${SHOP}`);
    expect(session!.isOnline).toBe(false);
    expect(session!.accessToken).toBe(h.fake.tokenStats(SHOP).lastAccessToken);
    expect(session!.refreshToken).toBe(h.fake.tokenStats(SHOP).lastRefreshToken);
    // An expiring token: about an hour, with a refresh token that lives much longer.
    const ttl = session!.expires!.getTime() - Date.now();
    expect(ttl).toBeGreaterThan(3500_000);
    expect(ttl).toBeLessThanOrEqual(3600_000);
    expect(session!.refreshTokenExpires!.getTime()).toBeGreaterThan(session!.expires!.getTime());
  });

  it('later requests reuse the stored offline token without another exchange', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await request(h.url)
        .get('/api/whoami')
        .set('Authorization', `Bearer ${h.fake.mintSessionToken(SHOP)}`);
      expect(res.status).toBe(200);
    }
    expect(h.fake.tokenStats(SHOP).exchanges).toBe(1);
  });

  it('stores the access and refresh tokens encrypted, never in clear', async () => {
    const row = await h.db.session.findUniqueOrThrow({ where: { id: `offline_${SHOP}` } });
    const stats = h.fake.tokenStats(SHOP);
    expect(row.accessToken).not.toContain(stats.lastAccessToken!);
    expect(row.refreshToken).not.toContain(stats.lastRefreshToken!);
    expect(row.accessToken.startsWith('t1.')).toBe(true);
    expect(row.refreshTokenExpires).toBeInstanceOf(Date);
    // Under another key the row does not open: it counts as absent (token exchange renews it).
    await expect(createSessionStore(h.db, testCipher()).loadSession(`offline_${SHOP}`)).resolves.toBeUndefined();
  });

  it('concurrent first requests of a new shop perform a single token exchange', async () => {
    const shop = 'rush-store.myshopify.com';
    h.fake.addShop({ domain: shop, name: 'Rush' });
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        request(h.url)
          .get('/api/whoami')
          .set('Authorization', `Bearer ${h.fake.mintSessionToken(shop)}`),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(h.fake.tokenStats(shop).exchanges).toBe(1);
    expect(await h.db.shop.count({ where: { domain: shop } })).toBe(1);
  });

  // The race behind the test above, made deterministic: request B found no session before
  // request A's exchange stored one, and asks for an exchange only after A's has finished (seen
  // on a loaded machine: two exchanges for five requests).
  it('a request that found no session before a concurrent exchange finished uses that exchange', async () => {
    const shop = 'late-store.myshopify.com';
    h.fake.addShop({ domain: shop, name: 'Late' });
    const seenByB = Date.now();
    const a = await h.tokens.exchangeSessionToken(shop, h.fake.mintSessionToken(shop), Date.now());
    const b = await h.tokens.exchangeSessionToken(shop, h.fake.mintSessionToken(shop), seenByB);
    expect(h.fake.tokenStats(shop).exchanges).toBe(1);
    expect(b.accessToken).toBe(a.accessToken);
    // a request that looked after that exchange (a stale token found since) exchanges anew
    await new Promise((r) => setTimeout(r, 5));
    const c = await h.tokens.exchangeSessionToken(shop, h.fake.mintSessionToken(shop), Date.now());
    expect(h.fake.tokenStats(shop).exchanges).toBe(2);
    expect(c.accessToken).not.toBe(a.accessToken);
  });

  it('a reinstall after uninstall exchanges again and revives the shop row', async () => {
    const before = await h.db.shop.findUniqueOrThrow({ where: { domain: SHOP } });
    // What app/uninstalled does: sessions deleted, shop marked, tokens revoked by Shopify.
    await h.db.session.deleteMany({ where: { shop: SHOP } });
    await h.db.shop.update({ where: { domain: SHOP }, data: { uninstalledAt: new Date(), tokenStatus: 'revoked' } });
    h.fake.revokeTokens(SHOP);

    const res = await request(h.url)
      .get('/api/whoami')
      .set('Authorization', `Bearer ${h.fake.mintSessionToken(SHOP)}`);
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(before.id);
    const after = await h.db.shop.findUniqueOrThrow({ where: { domain: SHOP } });
    expect(after).toMatchObject({ tokenStatus: 'active', uninstalledAt: null });
    expect(after.installedAt.getTime()).toBeGreaterThanOrEqual(before.installedAt.getTime());
    expect(h.fake.tokenStats(SHOP).exchanges).toBe(2);
  });

  it('a shop marked uninstalled whose session was not deleted (late, unordered webhooks) exchanges anew', async () => {
    const exchanges = h.fake.tokenStats(SHOP).exchanges;
    await h.db.shop.update({ where: { domain: SHOP }, data: { uninstalledAt: new Date() } });
    const res = await request(h.url)
      .get('/api/whoami')
      .set('Authorization', `Bearer ${h.fake.mintSessionToken(SHOP)}`);
    expect(res.status).toBe(200);
    expect(h.fake.tokenStats(SHOP).exchanges).toBe(exchanges + 1);
    expect(await h.db.shop.findUniqueOrThrow({ where: { domain: SHOP } })).toMatchObject({ uninstalledAt: null, tokenStatus: 'active' });
  });

  it('Shopify refusing the exchange gives 401 with the retry header; Shopify down gives 502', async () => {
    const shop = 'refused-store.myshopify.com';
    h.fake.addShop({ domain: shop });
    h.fake.failNext('access_token', 400);
    const refused = await request(h.url)
      .get('/api/whoami')
      .set('Authorization', `Bearer ${h.fake.mintSessionToken(shop)}`);
    expect(refused.status).toBe(401);
    expect(refused.headers['x-shopify-retry-invalid-session-request']).toBe('1');
    expect(refused.body.error.code).toBe('token_exchange_failed');

    h.fake.failNext('access_token', 503);
    const down = await request(h.url)
      .get('/api/whoami')
      .set('Authorization', `Bearer ${h.fake.mintSessionToken(shop)}`);
    expect(down.status).toBe(502);
    expect(down.body).toEqual({ error: { code: 'shopify_unavailable', message: expect.any(String) } });
    expect(await h.db.shop.count({ where: { domain: shop } })).toBe(0);

    const ok = await request(h.url)
      .get('/api/whoami')
      .set('Authorization', `Bearer ${h.fake.mintSessionToken(shop)}`);
    expect(ok.status).toBe(200);
  });

  it('a failing shop query does not block the install; the id and name are filled in later', async () => {
    const shop = 'slow-graphql.myshopify.com';
    h.fake.addShop({ domain: shop, id: '777', name: 'Slow' });
    h.fake.failNext('graphql', 503);
    const first = await request(h.url)
      .get('/api/whoami')
      .set('Authorization', `Bearer ${h.fake.mintSessionToken(shop)}`);
    expect(first.status).toBe(200);
    expect(await h.db.shop.findUniqueOrThrow({ where: { domain: shop } })).toMatchObject({ shopifyId: null, tokenStatus: 'active' });
    const again = await request(h.url)
      .get('/api/whoami')
      .set('Authorization', `Bearer ${h.fake.mintSessionToken(shop)}`);
    expect(again.status).toBe(200);
    expect(await h.db.shop.findUniqueOrThrow({ where: { domain: shop } })).toMatchObject({ shopifyId: '777', name: 'Slow' });
  });

  it('never writes a token or the app secret to the logs', () => {
    const text = h.logText();
    expect(text).toContain('offline token obtained by token exchange');
    const stats = h.fake.tokenStats(SHOP);
    expectNoSecrets(text, [stats.lastAccessToken, stats.lastRefreshToken, API_SECRET]);
    expect(text).not.toMatch(/shpat_|shprt_|eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\./);
  });
});

describe('SHOPIFY_ADMIN_ORIGIN with several apps in one process', () => {
  it('routes each shop to the fake shop of the app that serves it', async () => {
    const a = await startHarness({ shops: [{ domain: 'alpha.myshopify.com', id: '1' }] });
    const b = await startHarness({ shops: [{ domain: 'beta.myshopify.com', id: '2' }] });
    try {
      const ra = await request(a.url)
        .get('/api/whoami')
        .set('Authorization', `Bearer ${a.fake.mintSessionToken('alpha.myshopify.com')}`);
      const rb = await request(b.url)
        .get('/api/whoami')
        .set('Authorization', `Bearer ${b.fake.mintSessionToken('beta.myshopify.com')}`);
      expect([ra.status, rb.status]).toEqual([200, 200]);
      expect(a.fake.tokenStats('alpha.myshopify.com').exchanges).toBe(1);
      expect(b.fake.tokenStats('beta.myshopify.com').exchanges).toBe(1);
      // And later calls for alpha still reach a's fake shop although b was created last.
      const s = await a.tokens.getOfflineSession('alpha.myshopify.com');
      const { fetchShopIdentity } = await import('../../../src/integrations/shopify/shop-query');
      await expect(fetchShopIdentity(a.shopify, s!)).resolves.toEqual({ shopId: '1', shopName: 'alpha', domain: 'alpha.myshopify.com' });
    } finally {
      await a.close();
      await b.close();
    }
  });
});
