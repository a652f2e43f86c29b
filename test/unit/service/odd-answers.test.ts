// The client against a tiny server giving the odd answers a proxy, a redirect or a confused
// service gives: each is classified into the kind the answer table says
// (docs/delivery.md#what-each-answer-of-the-service-means).
import { createServiceClient } from '../../../src/integrations/service/client';
import type { ServiceClient, ServiceResult } from '../../../src/integrations/service/types';
import { adhocServer, captureLogs, json, type AdhocHandler, type AdhocServer } from './support';

const KEY = 'sk_odd_answers_key_0123456789abcdef';
const EVENT = { event_name: 'order_placed', email: 'a@example.com', event_attribute: { n: 1 } };
const RATE = { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '9' };
const HTML = '<!doctype html><html><body><h1>Maintenance</h1></body></html>';

let server: AdhocServer;
let elsewhere: AdhocServer;
let client: ServiceClient;
let handler: AdhocHandler;
const logs = captureLogs();

beforeAll(async () => {
  server = await adhocServer((req, res) => handler(req, res));
  elsewhere = await adhocServer((_req, res) => json(res, 200, { success: true }));
  client = createServiceClient({ baseUrl: server.url, webhookUrl: `${server.url}/hooks`, timeoutMs: 1000, logger: logs.logger });
});

afterAll(async () => {
  await client.close();
  await Promise.all([server.close(), elsewhere.close()]);
});

beforeEach(() => {
  server.seen.length = 0;
  elsewhere.seen.length = 0;
});

const failure = <T>(r: ServiceResult<T>) => {
  if (r.kind === 'ok') throw new Error('expected a failure, got ok');
  return r;
};

describe('send-event: a 2xx is a delivery only when it is the service’s JSON acceptance', () => {
  it('200 {"success": false} is retryable, and the service did not take it (not counted against the cap)', async () => {
    handler = (_req, res) => json(res, 200, { success: false, message: 'Event rejected.' }, RATE);
    const r = failure(await client.sendEvent(KEY, EVENT));
    expect(r).toMatchObject({ kind: 'retryable', status: 200, mayHaveArrived: false });
    expect(r.message).toMatch(/success: false: Event rejected\./);
  });

  it('200 with an HTML page and none of the service’s headers (a proxy) is retryable and never reached the service', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(HTML);
    const r = failure(await client.sendEvent(KEY, EVENT));
    expect(r).toMatchObject({ kind: 'retryable', status: 200, mayHaveArrived: false });
    expect(r.message).toMatch(/HTML page.*SERVICE_WEBHOOK_URL/);
    expect(r.message).not.toContain('Maintenance');
  });

  it('200 with an HTML page from the service itself (its rate headers) is retryable, and may have arrived', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'text/html', ...RATE }).end(HTML);
    expect(failure(await client.sendEvent(KEY, EVENT))).toMatchObject({ kind: 'retryable', mayHaveArrived: true });
  });

  it.each([
    ['an empty 200', 200, ''],
    ['an empty 202', 202, ''],
    ['a plain-text 200', 200, 'OK'],
  ])('%s is retryable', async (_label, status, text) => {
    handler = (_req, res) => res.writeHead(status, { 'content-type': 'text/plain' }).end(text);
    expect(failure(await client.sendEvent(KEY, EVENT))).toMatchObject({ kind: 'retryable', status, mayHaveArrived: false });
  });

  it('a 204 is a delivery when the service’s rate headers say it answered, else retryable', async () => {
    handler = (_req, res) => res.writeHead(204, RATE).end();
    expect(await client.sendEvent(KEY, EVENT)).toMatchObject({ kind: 'ok', status: 204 });
    handler = (_req, res) => res.writeHead(204).end();
    expect(await client.sendEvent(KEY, EVENT)).toMatchObject({ kind: 'retryable', status: 204 });
  });

  it.each([
    ['{"success": true}', { success: true }],
    ['{} (success not stated)', {}],
    ['a JSON string', 'queued'],
  ])('200 %s is a delivery', async (_label, body) => {
    handler = (_req, res) => json(res, 200, body, RATE);
    expect(await client.sendEvent(KEY, EVENT)).toMatchObject({ kind: 'ok', status: 200 });
  });
});

describe('send-event: statuses', () => {
  it('307 to another host is retryable, and is not followed: the key never reaches the other host', async () => {
    handler = (_req, res) => res.writeHead(307, { location: `${elsewhere.url}/webhook/send/?token=abc` }).end();
    const r = failure(await client.sendEvent(KEY, EVENT));
    expect(r).toMatchObject({ kind: 'retryable', status: 307, mayHaveArrived: false });
    expect(r.message).toContain(elsewhere.url);
    expect(r.message).toContain('SERVICE_WEBHOOK_URL');
    expect(r.message).not.toContain('token=abc');
    expect(r.message).not.toContain(KEY);
    expect(elsewhere.seen).toEqual([]);
    expect(server.seen).toHaveLength(1);
  });

  it.each([301, 302, 303, 308])('%i is retryable too', async (status) => {
    handler = (_req, res) => res.writeHead(status, { location: `${elsewhere.url}/x` }).end();
    expect(failure(await client.sendEvent(KEY, EVENT))).toMatchObject({ kind: 'retryable', status });
    expect(elsewhere.seen).toEqual([]);
  });

  it.each([408, 425, 500, 502, 503, 504])('%i is retryable, not counted as arrived', async (status) => {
    handler = (_req, res) => json(res, status, { detail: 'later' }, RATE);
    expect(failure(await client.sendEvent(KEY, EVENT))).toMatchObject({ kind: 'retryable', status, mayHaveArrived: false });
  });

  it.each([404, 410])('%i is not_found, naming the setting to check', async (status) => {
    handler = (_req, res) => json(res, status, { detail: 'Not found.' }, RATE);
    const r = failure(await client.sendEvent(KEY, EVENT));
    expect(r).toMatchObject({ kind: 'not_found', status, mayHaveArrived: false });
    expect(r.message).toMatch(/SERVICE_WEBHOOK_URL/);
  });

  it('an HTML 404 from a proxy is not_found too', async () => {
    handler = (_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<html><body>404 Not Found</body></html>');
    expect(failure(await client.sendEvent(KEY, EVENT))).toMatchObject({ kind: 'not_found', status: 404 });
  });

  it('400 is bad_request (dead), 401 auth (held), 413 and 422 bad_request', async () => {
    handler = (_req, res) => json(res, 400, { message: 'email is invalid' }, RATE);
    expect(failure(await client.sendEvent(KEY, EVENT))).toMatchObject({ kind: 'bad_request', message: 'email is invalid' });
    handler = (_req, res) => json(res, 401, { detail: 'Invalid API key.' }, RATE);
    expect(failure(await client.sendEvent(KEY, EVENT))).toMatchObject({ kind: 'auth', status: 401 });
    for (const status of [413, 422]) {
      handler = (_req, res) => json(res, status, { message: 'no' }, RATE);
      expect(failure(await client.sendEvent(KEY, EVENT))).toMatchObject({ kind: 'bad_request', status });
    }
  });
});

describe('contact delete (GDPR): never done on an answer the service did not give', () => {
  const EMAIL = 'gone@example.com';

  it('a JSON 404 from the service means the contact is already gone', async () => {
    handler = (_req, res) => json(res, 404, { detail: 'Contact not found.' }, RATE);
    expect(await client.deleteContact(KEY, EMAIL)).toMatchObject({ kind: 'ok', status: 404, value: { alreadyGone: true } });
  });

  it.each([
    ['an HTML 404 page', 'text/html', '<html><body><h1>404 Not Found</h1></body></html>'],
    ['a plain-text 404', 'text/plain', 'no such user'],
    ['an empty 404', 'text/plain', ''],
  ])('%s (a proxy, a wrong address) is not_found, naming SERVICE_BASE_URL', async (_label, type, text) => {
    handler = (_req, res) => res.writeHead(404, { 'content-type': type }).end(text);
    const r = failure(await client.deleteContact(KEY, EMAIL));
    expect(r).toMatchObject({ kind: 'not_found', status: 404 });
    expect(r.message).toMatch(/SERVICE_BASE_URL/);
  });

  it('200 with an HTML page is retryable, not a delete', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(HTML);
    expect(failure(await client.deleteContact(KEY, EMAIL))).toMatchObject({ kind: 'retryable', status: 200, mayHaveArrived: false });
  });

  it('200 {"success": false} is retryable', async () => {
    handler = (_req, res) => json(res, 200, { success: false }, RATE);
    expect(failure(await client.deleteContact(KEY, EMAIL))).toMatchObject({ kind: 'retryable', status: 200 });
  });

  it('the spec’s plain-text success sentence, an empty 204 and JSON are deletes', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('User created successfully');
    expect(await client.deleteContact(KEY, EMAIL)).toMatchObject({ kind: 'ok', value: { alreadyGone: false } });
    handler = (_req, res) => res.writeHead(204).end();
    expect(await client.deleteContact(KEY, EMAIL)).toMatchObject({ kind: 'ok', value: { alreadyGone: false } });
    handler = (_req, res) => json(res, 200, { message: 'User deleted successfully' });
    expect(await client.deleteContact(KEY, EMAIL)).toMatchObject({ kind: 'ok', value: { alreadyGone: false } });
  });

  it('a redirect is retryable and not followed', async () => {
    handler = (_req, res) => res.writeHead(302, { location: `${elsewhere.url}/api/webhook/contact/delete/` }).end();
    expect(failure(await client.deleteContact(KEY, EMAIL))).toMatchObject({ kind: 'retryable', status: 302 });
    expect(elsewhere.seen).toEqual([]);
  });
});

describe('reads and key checks', () => {
  it('a 404 on both paths of the lists is not_found, so connecting says "unavailable", not "invalid key"', async () => {
    handler = (_req, res) => json(res, 404, { detail: 'Not found.' });
    expect(failure(await client.listLists(KEY))).toMatchObject({ kind: 'not_found', status: 404 });
    handler = (_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<html>404</html>');
    expect(failure(await client.validateKey(KEY, { shopId: '1', shopName: 'S' }))).toMatchObject({ kind: 'not_found', status: 404 });
  });
});
