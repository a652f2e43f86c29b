import { HttpResponseError } from '@shopify/shopify-api';
import request from 'supertest';
import { fetchShopIdentity } from '../../../src/integrations/shopify/shop-query';
import { API_SECRET, expectNoSecrets, startHarness, type Harness } from './harness';

const SHOP = 'refresh-store.myshopify.com';

describe('expiring offline tokens: refresh and rotation', () => {
  let h: Harness;
  // Access tokens live 60 s, inside the 5-minute refresh margin: every use refreshes first.
  beforeAll(async () => {
    h = await startHarness({ shops: [{ domain: SHOP, id: '9', name: 'Refresh' }], accessTokenTtlSec: 60, encrypt: true });
  });
  afterAll(async () => {
    await h.close();
  });

  const install = async (shop = SHOP) => {
    const res = await request(h.url)
      .get('/api/whoami')
      .set('Authorization', `Bearer ${h.fake.mintSessionToken(shop)}`);
    expect(res.status).toBe(200);
  };

  it('refreshes a token close to expiry and stores the rotated refresh token', async () => {
    await install();
    const installed = h.fake.tokenStats(SHOP);
    const before = (await h.sessions.loadSession(`offline_${SHOP}`))!;
    expect(before.refreshToken).toBe(installed.lastRefreshToken);
    const refreshesBefore = installed.refreshes;

    const session = await h.tokens.getOfflineSession(SHOP);
    const after = h.fake.tokenStats(SHOP);
    expect(after.refreshes).toBe(refreshesBefore + 1);
    expect(session!.accessToken).toBe(after.lastAccessToken);
    expect(session!.accessToken).not.toBe(before.accessToken);
    expect(session!.refreshToken).toBe(after.lastRefreshToken);
    expect(session!.refreshToken).not.toBe(before.refreshToken);
    // Stored, not just returned.
    const stored = (await h.sessions.loadSession(`offline_${SHOP}`))!;
    expect(stored.refreshToken).toBe(after.lastRefreshToken);
    // And the new access token works against the Admin API.
    await expect(fetchShopIdentity(h.shopify, session!)).resolves.toMatchObject({ shopId: '9', shopName: 'Refresh' });
  });

  it('a rotated refresh token is good for one use only', async () => {
    const current = (await h.sessions.loadSession(`offline_${SHOP}`))!;
    const oldRefreshToken = current.refreshToken!;
    const { session: next } = await h.shopify.auth.refreshToken({ shop: SHOP, refreshToken: oldRefreshToken });
    expect(next.refreshToken).not.toBe(oldRefreshToken);
    await h.sessions.storeSession(next);

    const rejectedBefore = h.fake.tokenStats(SHOP).refreshRejected;
    const reuse = h.shopify.auth.refreshToken({ shop: SHOP, refreshToken: oldRefreshToken });
    await expect(reuse).rejects.toBeInstanceOf(HttpResponseError);
    await expect(reuse).rejects.toMatchObject({ response: { code: 400, body: { error: 'invalid_grant' } } });
    expect(h.fake.tokenStats(SHOP).refreshRejected).toBe(rejectedBefore + 1);

    // The newest one still works.
    const refreshed = await h.tokens.refreshOfflineSession(SHOP);
    expect(refreshed!.accessToken).toBe(h.fake.tokenStats(SHOP).lastAccessToken);
  });

  it('concurrent callers share one refresh, so the single-use token is never spent twice', async () => {
    const before = h.fake.tokenStats(SHOP);
    const sessions = await Promise.all(Array.from({ length: 6 }, () => h.tokens.getOfflineSession(SHOP)));
    const after = h.fake.tokenStats(SHOP);
    expect(after.refreshes).toBe(before.refreshes + 1);
    expect(after.refreshRejected).toBe(before.refreshRejected);
    expect(new Set(sessions.map((s) => s!.accessToken)).size).toBe(1);
    expect((await h.db.shop.findUniqueOrThrow({ where: { domain: SHOP } })).tokenStatus).toBe('active');
  });

  it('a refused refresh marks the shop refresh_failed with a sentence, without crashing', async () => {
    h.fake.revokeTokens(SHOP);
    const session = await h.tokens.getOfflineSession(SHOP);
    // The access token has not expired yet, so the caller still gets it.
    expect(session).not.toBeNull();
    const shop = await h.db.shop.findUniqueOrThrow({ where: { domain: SHOP } });
    expect(shop.tokenStatus).toBe('refresh_failed');
    expect(shop.tokenError).toMatch(/^Shopify refused to refresh the access token \(HTTP 400 invalid_grant\)/);
    expectNoSecrets(shop.tokenError!, [session!.accessToken, session!.refreshToken]);

    // Once the access token has expired, there is no usable session.
    await h.db.session.update({ where: { id: `offline_${SHOP}` }, data: { expires: new Date(Date.now() - 1000) } });
    await expect(h.tokens.getOfflineSession(SHOP)).resolves.toBeNull();
  });

  it('the next embedded request heals a failed refresh by token exchange', async () => {
    const exchanges = h.fake.tokenStats(SHOP).exchanges;
    await install();
    expect(h.fake.tokenStats(SHOP).exchanges).toBe(exchanges + 1);
    expect(await h.db.shop.findUniqueOrThrow({ where: { domain: SHOP } })).toMatchObject({ tokenStatus: 'active', tokenError: null });
    await expect(h.tokens.getOfflineSession(SHOP)).resolves.not.toBeNull();
  });

  it('Shopify unreachable during refresh is a retryable refresh_failed state', async () => {
    h.fake.failNext('access_token', 503);
    const session = await h.tokens.getOfflineSession(SHOP);
    expect(session).not.toBeNull();
    const failed = await h.db.shop.findUniqueOrThrow({ where: { domain: SHOP } });
    expect(failed.tokenStatus).toBe('refresh_failed');
    expect(failed.tokenError).toMatch(/could not be reached.*it will be retried/);

    await h.tokens.getOfflineSession(SHOP);
    expect(await h.db.shop.findUniqueOrThrow({ where: { domain: SHOP } })).toMatchObject({ tokenStatus: 'active', tokenError: null });
  });

  it('an expired refresh token is not sent and marks refresh_failed', async () => {
    const refreshes = h.fake.tokenStats(SHOP).refreshes;
    await h.db.session.update({ where: { id: `offline_${SHOP}` }, data: { refreshTokenExpires: new Date(Date.now() - 1000) } });
    await h.tokens.getOfflineSession(SHOP);
    expect(h.fake.tokenStats(SHOP).refreshes).toBe(refreshes);
    expect((await h.db.shop.findUniqueOrThrow({ where: { domain: SHOP } })).tokenError).toMatch(/refresh token has expired/);
  });

  it('an access token Shopify no longer accepts gives 401 from the Admin API', async () => {
    await install('other-store.myshopify.com');
    const session = (await h.sessions.loadSession('offline_other-store.myshopify.com'))!;
    h.fake.expireAccessToken('other-store.myshopify.com');
    await expect(fetchShopIdentity(h.shopify, session)).rejects.toMatchObject({ response: { code: 401 } });
  });

  it('no token appears in the logs', () => {
    const stats = h.fake.tokenStats(SHOP);
    expectNoSecrets(h.logText(), [stats.lastAccessToken, stats.lastRefreshToken, API_SECRET]);
    expect(h.logText()).not.toMatch(/shpat_|shprt_/);
  });
});
