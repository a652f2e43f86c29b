import request from 'supertest';
import { API_KEY, API_SECRET, startHarness, type Harness } from './harness';
import { signHs256 } from '../../../sandbox/fake-shop/jwt';

const SHOP = 'token-store.myshopify.com';
const RETRY = 'x-shopify-retry-invalid-session-request';

describe('session-token middleware on /api/*', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ shops: [{ domain: SHOP }] });
  });
  afterAll(async () => {
    await h.close();
  });

  const call = (authorization?: string) => {
    const r = request(h.url).get('/api/whoami');
    return authorization === undefined ? r : r.set('Authorization', authorization);
  };
  const expectRejected = (res: request.Response, code = 'invalid_session_token') => {
    expect(res.status).toBe(401);
    expect(res.headers[RETRY]).toBe('1');
    expect(res.body).toEqual({ error: { code, message: expect.any(String) } });
  };
  const now = () => Math.floor(Date.now() / 1000);

  it('a valid session token passes and names the shop', async () => {
    const res = await call(`Bearer ${h.fake.mintSessionToken(SHOP)}`);
    expect(res.status).toBe(200);
    expect(res.body.domain).toBe(SHOP);
  });

  it('no Authorization header gives 401 with the retry header', async () => {
    expectRejected(await call(), 'missing_session_token');
    expectRejected(await call('Basic abc'), 'missing_session_token');
  });

  it('a token for another app (wrong aud) gives 401 with the retry header', async () => {
    expectRejected(await call(`Bearer ${h.fake.mintSessionToken(SHOP, { aud: 'another-app' })}`));
  });

  it('an expired token gives 401 with the retry header', async () => {
    expectRejected(await call(`Bearer ${h.fake.mintSessionToken(SHOP, { exp: now() - 60, nbf: now() - 120, iat: now() - 120 })}`));
  });

  it('a token not yet valid gives 401', async () => {
    expectRejected(await call(`Bearer ${h.fake.mintSessionToken(SHOP, { nbf: now() + 120, exp: now() + 180 })}`));
  });

  it('a token signed with another secret gives 401 with the retry header', async () => {
    expectRejected(await call(`Bearer ${h.fake.mintSessionToken(SHOP, { secret: 'not-the-app-secret' })}`));
  });

  it('garbage, or an unsigned token, gives 401', async () => {
    expectRejected(await call('Bearer not-a-jwt'));
    const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ aud: API_KEY, dest: `https://${SHOP}` })).toString('base64url')}.`;
    expectRejected(await call(`Bearer ${unsigned}`));
  });

  it('a token whose dest is not a shop domain, or disagrees with iss, gives 401', async () => {
    expectRejected(
      await call(`Bearer ${h.fake.mintSessionToken(SHOP, { dest: 'https://evil.example.com', iss: 'https://evil.example.com/admin' })}`),
    );
    expectRejected(await call(`Bearer ${h.fake.mintSessionToken(SHOP, { dest: 'https://localhost:3000' })}`));
    expectRejected(await call(`Bearer ${h.fake.mintSessionToken(SHOP, { iss: 'https://other-store.myshopify.com/admin' })}`));
  });

  it('the shop is sanitised: an upper-case dest maps to the same shop row', async () => {
    const jwt = signHs256(
      {
        iss: `https://${SHOP.toUpperCase()}/admin`,
        dest: `https://${SHOP.toUpperCase()}`,
        aud: API_KEY,
        sub: '1',
        exp: now() + 60,
        nbf: now(),
        iat: now(),
        jti: 'j',
        sid: 's',
      },
      API_SECRET,
    );
    const res = await call(`Bearer ${jwt}`);
    expect(res.status).toBe(200);
    expect(res.body.domain).toBe(SHOP);
    expect(await h.db.shop.count()).toBe(1);
  });

  it('rejected tokens never reach the logs', async () => {
    const jwt = h.fake.mintSessionToken(SHOP, { secret: 'not-the-app-secret' });
    await call(`Bearer ${jwt}`);
    expect(h.logText()).not.toContain(jwt);
    expect(h.logText()).not.toContain(jwt.split('.')[1]);
  });
});
