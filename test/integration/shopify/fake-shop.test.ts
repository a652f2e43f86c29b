import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import request from 'supertest';
import { createLogger } from '../../../src/observability/logger';
import { startFakeShop, type FakeShop } from '../../../sandbox/fake-shop';
import { createShopify, type ShopifyApi } from '../../../src/integrations/shopify/api';
import { testConfig } from '../../helpers/config';
import { API_KEY, API_SECRET } from './harness';

const SHOP = 'hooks-store.myshopify.com';

describe('the fake shop answers what the Shopify library expects', () => {
  let fake: FakeShop;
  let shopify: ShopifyApi;
  let server: Server;
  let url: string;
  beforeAll(async () => {
    fake = await startFakeShop({ apiKey: API_KEY, apiSecret: API_SECRET, shops: [{ domain: SHOP }] });
    shopify = createShopify(
      testConfig('file:unused.db', { SHOPIFY_API_KEY: API_KEY, SHOPIFY_API_SECRET: API_SECRET }),
      createLogger('silent'),
    );
    const app = express();
    app.post('/webhooks', express.text({ type: '*/*' }), async (req, res) => {
      const result = await shopify.webhooks.validate({ rawBody: req.body as string, rawRequest: req, rawResponse: res });
      res.status(result.valid ? 200 : 401).json(result);
    });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await fake.close();
  });

  it('sendWebhook signs the raw body and sends every X-Shopify-* header', async () => {
    const res = await fake.sendWebhook(url, {
      topic: 'orders/create',
      shopDomain: SHOP,
      payload: { id: 1 },
      webhookId: 'wh-1',
      eventId: 'ev-1',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      valid: true,
      topic: 'ORDERS_CREATE',
      domain: SHOP,
      apiVersion: '2026-10',
      webhookId: 'wh-1',
      eventId: 'ev-1',
    });
  });

  it('a raw string payload is sent byte for byte (big ids keep their digits)', async () => {
    const raw = '{"id":12345678901234567890}';
    const signed = fake.signedWebhookRequest({ topic: 'customers/update', shopDomain: SHOP, payload: raw });
    expect(signed.body).toBe(raw);
    const res = await request(url).post('/webhooks').set(signed.headers).send(signed.body);
    expect(res.status).toBe(200);
    expect(Object.keys(signed.headers).sort()).toEqual(
      [
        'Content-Type',
        'X-Shopify-API-Version',
        'X-Shopify-Event-Id',
        'X-Shopify-Hmac-Sha256',
        'X-Shopify-Shop-Domain',
        'X-Shopify-Topic',
        'X-Shopify-Triggered-At',
        'X-Shopify-Webhook-Id',
      ].sort(),
    );
  });

  it('a webhook signed with another secret, or with no HMAC, is refused', async () => {
    const wrong = await fake.sendWebhook(url, { topic: 'orders/paid', shopDomain: SHOP, payload: {}, secret: 'other' });
    expect(wrong).toMatchObject({ status: 401, body: { valid: false, reason: 'invalid_hmac' } });
    const missing = await fake.sendWebhook(url, { topic: 'orders/paid', shopDomain: SHOP, payload: {}, hmac: '' });
    expect(missing).toMatchObject({ status: 401, body: { valid: false, reason: 'missing_hmac' } });
  });

  it('mints session tokens the library accepts, for the shop in dest', async () => {
    const payload = await shopify.session.decodeSessionToken(fake.mintSessionToken(SHOP));
    expect(payload).toMatchObject({ aud: API_KEY, dest: `https://${SHOP}`, iss: `https://${SHOP}/admin`, sub: '1' });
    expect(payload.exp - payload.iat).toBe(60);
  });

  it('the consent page redirects back with a code and an hmac the library verifies', async () => {
    const authorize = `https://${SHOP}/admin/oauth/authorize?client_id=${API_KEY}&scope=read_orders&redirect_uri=${encodeURIComponent('https://app.test/auth/callback')}&state=abc`;
    const res = await request(fake.url)
      .get(`/admin/oauth/authorize${new URL(authorize).search}`)
      .set('Host', SHOP);
    expect(res.status).toBe(302);
    const back = new URL(res.headers.location as string);
    expect(back.origin + back.pathname).toBe('https://app.test/auth/callback');
    const query = Object.fromEntries(back.searchParams);
    expect(query).toMatchObject({ shop: SHOP, state: 'abc', code: expect.any(String), timestamp: expect.any(String) });
    await expect(shopify.utils.validateHmac(query)).resolves.toBe(true);
  });

  it('the token endpoint refuses a wrong client secret and unknown grants', async () => {
    const bad = await request(fake.url)
      .post('/admin/oauth/access_token')
      .send({ client_id: API_KEY, client_secret: 'nope', grant_type: 'refresh_token', refresh_token: 'x' });
    expect(bad.status).toBe(401);
    const unknown = await request(fake.url)
      .post('/admin/oauth/access_token')
      .type('form')
      .send({ client_id: API_KEY, client_secret: API_SECRET, grant_type: 'password' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('unsupported_grant_type');
  });
});
