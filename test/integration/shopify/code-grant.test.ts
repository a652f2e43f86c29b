import request from 'supertest';
import { signOAuthQuery } from '../../../sandbox/fake-shop';
import { API_KEY, API_SECRET, expectNoSecrets, startHarness, type Harness } from './harness';

const SHOP = 'standalone-store.myshopify.com';

/** GET /auth, then what the browser keeps: the state cookies and the consent-page URL. */
async function begin(h: Harness, shop = SHOP): Promise<{ cookie: string; authorizeUrl: string }> {
  const res = await request(h.url).get(`/auth?shop=${shop}`);
  expect(res.status).toBe(302);
  const setCookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  // The cookies are Secure; over plain http we carry them ourselves.
  const cookie = setCookie.map((c) => c.split(';')[0]).join('; ');
  return { cookie, authorizeUrl: res.headers.location as string };
}

/** The callback path and query the consent page sends the merchant back to. */
function callbackOf(h: Harness, authorizeUrl: string): { path: string; params: Record<string, string> } {
  const back = new URL(h.fake.approveAuthorization(authorizeUrl));
  return { path: back.pathname, params: Object.fromEntries(back.searchParams) };
}

const withQuery = (path: string, params: Record<string, string>) => `${path}?${new URLSearchParams(params).toString()}`;

describe('authorization-code grant (non-embedded install)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ shops: [{ domain: SHOP, id: '42', name: 'Standalone' }] });
  });
  afterAll(async () => {
    await h.close();
  });

  it('GET /auth with an invalid shop gives 400 and the error body', async () => {
    for (const shop of ['', 'evil.example.com', 'localhost:3000', 'https://x.myshopify.com', 'x.myshopify.com.evil.com']) {
      const res = await request(h.url).get(`/auth?shop=${encodeURIComponent(shop)}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: { code: 'invalid_shop', message: expect.any(String) } });
    }
  });

  it('GET /auth redirects to the consent page with the signed state cookies', async () => {
    const res = await request(h.url).get(`/auth?shop=${SHOP}`);
    expect(res.status).toBe(302);
    const location = new URL(res.headers.location as string);
    expect(location.origin).toBe(`https://${SHOP}`);
    expect(location.pathname).toBe('/admin/oauth/authorize');
    expect(location.searchParams.get('client_id')).toBe(API_KEY);
    expect(location.searchParams.get('redirect_uri')).toBe('https://connector.example.test/auth/callback');
    const cookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []).join('\n');
    expect(cookies).toMatch(/shopify_app_state=/);
    expect(cookies).toMatch(/shopify_app_state\.sig=/);
  });

  it('rejects a callback with a bad hmac', async () => {
    const { cookie, authorizeUrl } = await begin(h);
    const { path, params } = callbackOf(h, authorizeUrl);
    const res = await request(h.url)
      .get(withQuery(path, { ...params, hmac: 'a'.repeat(64) }))
      .set('Cookie', cookie);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_oauth_callback');
    expect(h.fake.tokenStats(SHOP).codeGrants).toBe(0);
  });

  it('rejects a callback with a stale timestamp even when correctly signed', async () => {
    const { cookie, authorizeUrl } = await begin(h);
    const { path, params } = callbackOf(h, authorizeUrl);
    const stale: Record<string, string> = { ...params, timestamp: String(Math.floor(Date.now() / 1000) - 300) };
    stale.hmac = signOAuthQuery(stale, API_SECRET);
    const res = await request(h.url).get(withQuery(path, stale)).set('Cookie', cookie);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_oauth_callback');
    expect(h.logText()).toMatch(/"reason":"invalid, InvalidHmacError"/); // the timestamp check, not the signature
  });

  it('rejects a callback whose state is not the one in the cookie', async () => {
    const first = await begin(h);
    const second = await begin(h);
    const { path, params } = callbackOf(h, second.authorizeUrl);
    const res = await request(h.url).get(withQuery(path, params)).set('Cookie', first.cookie);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_oauth_callback');
  });

  it('rejects a callback without the state cookie', async () => {
    const { authorizeUrl } = await begin(h);
    const { path, params } = callbackOf(h, authorizeUrl);
    const res = await request(h.url).get(withQuery(path, params));
    expect(res.status).toBe(400);
    expect(await h.db.session.count()).toBe(0);
    expect(await h.db.shop.count()).toBe(0);
  });

  it('a genuine callback stores an expiring offline session, records the shop and redirects to the app', async () => {
    const { cookie, authorizeUrl } = await begin(h);
    const { path, params } = callbackOf(h, authorizeUrl);
    const res = await request(h.url).get(withQuery(path, params)).set('Cookie', cookie);
    expect(res.status).toBe(302);
    const to = new URL(res.headers.location as string, 'http://app');
    expect(to.pathname).toBe('/');
    expect(to.searchParams.get('shop')).toBe(SHOP);
    expect(to.searchParams.get('host')).toBe(params.host);

    expect(h.fake.tokenStats(SHOP).codeGrants).toBe(1);
    expect(await h.db.shop.findUniqueOrThrow({ where: { domain: SHOP } })).toMatchObject({
      shopifyId: '42',
      name: 'Standalone',
      tokenStatus: 'active',
    });
    const session = await h.tokens.getOfflineSession(SHOP);
    expect(session!.accessToken).toBe(h.fake.tokenStats(SHOP).lastAccessToken);
    expect(session!.refreshToken).toBe(h.fake.tokenStats(SHOP).lastRefreshToken);
    expect(session!.expires).toBeInstanceOf(Date);

    // Replaying the same callback: the code was used once and Shopify refuses it.
    const replay = await request(h.url).get(withQuery(path, params)).set('Cookie', cookie);
    expect(replay.status).toBe(400);
    expect(replay.body.error.code).toBe('oauth_code_rejected');
    expect(h.fake.tokenStats(SHOP).codeGrants).toBe(1);
  });

  it('Shopify down during the code exchange gives 502', async () => {
    const { cookie, authorizeUrl } = await begin(h);
    const { path, params } = callbackOf(h, authorizeUrl);
    h.fake.failNext('access_token', 503);
    const res = await request(h.url).get(withQuery(path, params)).set('Cookie', cookie);
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('shopify_unavailable');
  });

  it('keeps codes and tokens out of the logs', () => {
    const stats = h.fake.tokenStats(SHOP);
    expectNoSecrets(h.logText(), [stats.lastAccessToken, stats.lastRefreshToken, API_SECRET]);
  });
});
