// The client against tiny ad-hoc servers giving the odd shapes the spec allows.
import * as errorsModule from '../../../src/integrations/service/errors';
import { createServiceClient } from '../../../src/integrations/service/client';
import type { ServiceClient } from '../../../src/integrations/service/types';
import { adhocServer, captureLogs, json, type AdhocHandler, type AdhocServer } from './support';

const KEY = 'sk_shape_test_key_1234567890';

let server: AdhocServer;
let client: ServiceClient;
let handler: AdhocHandler;
const logs = captureLogs();

beforeAll(async () => {
  server = await adhocServer((req, res) => handler(req, res));
  // A trailing slash and a path prefix on the base URL are both tolerated.
  client = createServiceClient({
    baseUrl: `${server.url}/prefix/`,
    webhookUrl: `${server.url}/hooks`,
    timeoutMs: 1000,
    logger: logs.logger,
  });
});

afterAll(async () => {
  await client.close();
  await server.close();
});

beforeEach(() => {
  server.seen.length = 0;
  handler = (_req, res) => json(res, 200, {});
});

describe('checkKey', () => {
  it('accepts an empty 200 body', async () => {
    handler = (_req, res) => res.writeHead(200).end();
    expect(await client.checkKey(KEY)).toMatchObject({ kind: 'ok', status: 200, rate: {} });
  });

  it('accepts {"success": true}, and treats {"success": false} as auth', async () => {
    handler = (_req, res) => json(res, 200, { success: true });
    expect((await client.checkKey(KEY)).kind).toBe('ok');
    handler = (_req, res) => json(res, 200, { success: false });
    expect(await client.checkKey(KEY)).toMatchObject({ kind: 'auth', status: 200 });
  });

  it('falls back to the /api path once on 404', async () => {
    handler = (req, res) => (req.path.includes('/api/') ? json(res, 200, { success: true }) : json(res, 404, { detail: 'Not found.' }));
    expect(await client.checkKey(KEY)).toMatchObject({ kind: 'ok', status: 200 });
    expect(server.seen.map((r) => r.path)).toEqual(['/prefix/webhook/api_key/validate/', '/prefix/api/webhook/api_key/validate/']);
  });
});

describe('listLists and listCustomFields parse tolerantly', () => {
  const lists = [{ id: 'a', name: 'Alpha' }, { list_id: 7, title: 'Seven' }, { something: 'else' }];
  it.each([
    ['a bare array', lists],
    ['data', { data: lists }],
    ['results', { count: 3, results: lists }],
    ['lists', { lists }],
    ['items', { items: lists }],
    ['nested data.results', { data: { results: lists } }],
  ])('lists wrapped as %s', async (_label, body) => {
    handler = (_req, res) => json(res, 200, body);
    const r = await client.listLists(KEY);
    if (r.kind !== 'ok') throw new Error(r.message);
    expect(r.value).toEqual([
      { id: 'a', name: 'Alpha', raw: lists[0] },
      { id: '7', name: 'Seven', raw: lists[1] },
      { id: null, name: null, raw: lists[2] },
    ]);
  });

  it('falls back to /api/webhook/lists/ on 404, and gives up after one retry', async () => {
    handler = (req, res) => (req.path.startsWith('/prefix/api/') ? json(res, 200, [{ id: 'x', name: 'X' }]) : res.writeHead(404).end());
    expect(await client.listLists(KEY)).toMatchObject({ kind: 'ok', value: [{ id: 'x', name: 'X' }] });
    server.seen.length = 0;
    handler = (_req, res) => json(res, 404, { detail: 'Not found.' });
    const r = await client.listLists(KEY);
    // a 404 on both paths: the address is wrong (see odd-answers.test.ts)
    expect(r).toMatchObject({ kind: 'not_found', status: 404 });
    expect(r.kind !== 'ok' && r.message).toMatch(/404/);
    expect(server.seen.map((s) => s.path)).toEqual(['/prefix/webhook/lists/', '/prefix/api/webhook/lists/']);
  });

  it('custom fields: alternates, string items and wrappers', async () => {
    handler = (_req, res) =>
      json(res, 200, {
        custom_fields: [{ field_key: 'city', name: 'City', field_type: 'text' }, { key: 'vip', label: 'VIP', type: 'boolean' }, 'plain'],
      });
    const r = await client.listCustomFields(KEY);
    if (r.kind !== 'ok') throw new Error(r.message);
    expect(r.value.map(({ key, label, type }) => ({ key, label, type }))).toEqual([
      { key: 'city', label: 'City', type: 'text' },
      { key: 'vip', label: 'VIP', type: 'boolean' },
      { key: 'plain', label: 'plain', type: null },
    ]);
    expect(server.seen.map((s) => s.path)).toEqual(['/prefix/api/webhook/customfields/']);
  });

  it('custom fields under "fields", and no fallback on 404 (only one path is given)', async () => {
    handler = (_req, res) => json(res, 200, { fields: [{ name: 'tier' }] });
    expect(await client.listCustomFields(KEY)).toMatchObject({ kind: 'ok', value: [{ key: 'tier', label: 'tier', type: null }] });
    server.seen.length = 0;
    handler = (_req, res) => res.writeHead(404).end();
    expect((await client.listCustomFields(KEY)).kind).toBe('not_found');
    expect(server.seen).toHaveLength(1);
  });

  it('a body with no array is an empty list', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('nothing here');
    expect(await client.listLists(KEY)).toMatchObject({ kind: 'ok', value: [] });
  });
});

describe('deleteContact', () => {
  it('accepts a plain-text 200 body', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('User created successfully');
    expect(await client.deleteContact(KEY, 'a@example.com')).toMatchObject({ kind: 'ok', status: 200, value: { alreadyGone: false } });
    expect(JSON.parse(server.seen[0]!.body)).toEqual({ email: 'a@example.com' });
  });

  it('accepts an empty 204, and a 404 the service answered (JSON) means already gone', async () => {
    handler = (_req, res) => res.writeHead(204).end();
    expect(await client.deleteContact(KEY, 'a@example.com')).toMatchObject({ kind: 'ok', value: { alreadyGone: false } });
    handler = (_req, res) => json(res, 404, { detail: 'Contact not found.' });
    expect(await client.deleteContact(KEY, 'a@example.com')).toMatchObject({ kind: 'ok', status: 404, value: { alreadyGone: true } });
  });
});

describe('validateKey', () => {
  it('sends the documented body with Bearer auth', async () => {
    handler = (_req, res) => json(res, 200, { success: true, workspace_id: 'w1', workspace_name: 'One' });
    expect(await client.validateKey(KEY, { shopId: 's1', shopName: 'Shop' })).toMatchObject({
      kind: 'ok',
      value: { workspaceId: 'w1', workspaceName: 'One' },
    });
    const req = server.seen[0]!;
    expect(req).toMatchObject({ method: 'POST', path: '/prefix/webhook/api_key/validate' });
    expect(JSON.parse(req.body)).toEqual({ type: 'shopify', data: { shop_id: 's1', shop_name: 'Shop' } });
    expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(req.headers['x-service-api-key']).toBeUndefined();
  });

  it('a numeric workspace id becomes a string; a missing name becomes empty', async () => {
    handler = (_req, res) => json(res, 200, { success: true, workspace_id: 99 });
    expect(await client.validateKey(KEY, { shopId: 's', shopName: 'S' })).toMatchObject({
      kind: 'ok',
      value: { workspaceId: '99', workspaceName: '' },
    });
  });

  it('success:false is auth; a 200 without a workspace id is retryable', async () => {
    handler = (_req, res) => json(res, 200, { success: false, workspace_id: 'w' });
    expect(await client.validateKey(KEY, { shopId: 's', shopName: 'S' })).toMatchObject({ kind: 'auth', status: 200 });
    handler = (_req, res) => res.writeHead(200).end();
    expect(await client.validateKey(KEY, { shopId: 's', shopName: 'S' })).toMatchObject({ kind: 'retryable', status: 200 });
  });
});

describe('sendEvent', () => {
  it('goes to the webhook URL with the body as given, Accept and Content-Type', async () => {
    handler = (_req, res) => json(res, 202, { success: true });
    const body = { event_name: 'order_paid', email: 'b@example.com', event_attribute: { n: 1 }, first_name: 'B' };
    expect(await client.sendEvent(KEY, body)).toMatchObject({ kind: 'ok', status: 202 });
    const req = server.seen[0]!;
    expect(req.path).toBe('/hooks/webhook/send/');
    expect(JSON.parse(req.body)).toEqual(body);
    expect(req.headers).toMatchObject({ accept: 'application/json', 'content-type': 'application/json', 'x-service-api-key': KEY });
  });
});

describe('classification of odd answers', () => {
  it('429 without any headers: rate_limited, no retryAfterMs, empty rate', async () => {
    handler = (_req, res) => res.writeHead(429).end();
    const r = await client.sendEvent(KEY, { event_name: 'e', email: 'a@example.com' });
    expect(r).toEqual({
      kind: 'rate_limited',
      status: 429,
      message: expect.any(String),
      rate: {},
      durationMs: expect.any(Number),
      mayHaveArrived: false,
    });
  });

  // The dates are made from the clock the client reads: jest's, standing still on a whole second
  // (only Date is faked; the timers and the sockets run as usual), so a date five seconds ahead
  // is five seconds ahead when the client reads it too, however long the request took.
  describe('429 with a Retry-After', () => {
    const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
    beforeEach(() =>
      jest.useFakeTimers({
        now: NOW,
        doNotFake: [
          'hrtime',
          'nextTick',
          'performance',
          'queueMicrotask',
          'setImmediate',
          'clearImmediate',
          'setInterval',
          'clearInterval',
          'setTimeout',
          'clearTimeout',
        ],
      }),
    );
    afterEach(() => jest.useRealTimers());

    it.each<[string, () => Record<string, string>, number]>([
      ['Retry-After seconds', () => ({ 'retry-after': '3' }), 3000],
      ['fractional Retry-After', () => ({ 'retry-after': '0.25' }), 250],
      ['Retry-After HTTP-date', () => ({ 'retry-after': new Date(Date.now() + 5000).toUTCString() }), 5000],
      ['x-ratelimit-reset seconds', () => ({ 'x-ratelimit-reset': '2' }), 2000],
      ['x-ratelimit-reset epoch seconds', () => ({ 'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 4) }), 4000],
    ])('%s', async (_label, headers, expected) => {
      expect(Date.now()).toBe(NOW);
      handler = (_req, res) => res.writeHead(429, { ...headers(), 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '0' }).end();
      const r = await client.checkKey(KEY);
      if (r.kind !== 'rate_limited') throw new Error(`expected rate_limited, got ${r.kind}`);
      expect(r.retryAfterMs).toBe(expected);
      expect(r.rate).toEqual({ limit: 10, remaining: 0 });
    });
  });

  it('rate headers are read on failures too', async () => {
    handler = (_req, res) => json(res, 503, { detail: 'Maintenance' }, { 'x-ratelimit-limit': '25', 'x-ratelimit-remaining': '7' });
    expect(await client.checkKey(KEY)).toMatchObject({
      kind: 'retryable',
      status: 503,
      message: 'The email service failed with status 503: Maintenance',
      rate: { limit: 25, remaining: 7 },
    });
  });

  it('403 message is the service detail; 400 message is the service message', async () => {
    handler = (_req, res) => json(res, 403, { detail: 'You do not have permission to perform this action.' });
    expect(await client.checkKey(KEY)).toMatchObject({ kind: 'blocked', message: 'You do not have permission to perform this action.' });
    handler = (_req, res) => json(res, 400, { message: 'event_name is required.' });
    expect(await client.sendEvent(KEY, { event_name: '', email: 'a@example.com' })).toMatchObject({
      kind: 'bad_request',
      message: 'event_name is required.',
    });
  });

  it('400 with field errors and no message is summarised', async () => {
    handler = (_req, res) => json(res, 400, { email: ['Enter a valid email address.'] });
    expect(await client.sendEvent(KEY, { event_name: 'e', email: 'x' })).toMatchObject({
      kind: 'bad_request',
      message: 'email: Enter a valid email address.',
    });
  });

  it('another 4xx is bad_request naming the status', async () => {
    handler = (_req, res) => res.writeHead(418).end();
    expect(await client.sendEvent(KEY, { event_name: 'e', email: 'a@example.com' })).toMatchObject({
      kind: 'bad_request',
      status: 418,
      message: 'The email service answered with unexpected status 418.',
    });
  });

  it('406 is not_acceptable, logged at error level', async () => {
    logs.lines.length = 0;
    handler = (_req, res) => res.writeHead(406).end();
    expect(await client.listLists(KEY)).toMatchObject({ kind: 'not_acceptable', status: 406 });
    expect(logs.levels()).toEqual([50]);
  });

  it('an HTML 502 page is not quoted in the message', async () => {
    handler = (_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>Bad gateway</body></html>');
    expect(await client.checkKey(KEY)).toMatchObject({ kind: 'retryable', message: 'The email service failed with status 502.' });
  });
});

describe('keys that cannot be sent', () => {
  it.each([
    ['empty', ''],
    ['with a line break', 'sk_live_abc\r\nX-Evil: 1'],
    ['with a space', 'sk live'],
  ])('%s → auth without a request', async (_l, key) => {
    const r = await client.checkKey(key);
    expect(r).toMatchObject({ kind: 'auth', rate: {}, durationMs: 0 });
    expect(server.seen).toHaveLength(0);
  });
});

describe('error bodies that carry both message and detail', () => {
  it('403 prefers detail, 400 prefers message', async () => {
    handler = (req, res) => json(res, req.path.includes('send') ? 400 : 403, { message: 'the message', detail: 'the detail' });
    expect(await client.checkKey(KEY)).toMatchObject({ kind: 'blocked', message: 'the detail' });
    expect(await client.sendEvent(KEY, { event_name: 'e', email: 'a@example.com' })).toMatchObject({
      kind: 'bad_request',
      message: 'the message',
    });
  });
});

describe('whether a failed request may have reached the service', () => {
  it('is false for an answer (the service refused) and true for a timeout (it may be processing it)', async () => {
    const answered = await errorsModule.failureFromResponse({
      status: 500,
      headers: {},
      body: undefined,
      text: '',
      rate: {},
      durationMs: 1,
    });
    expect(answered.mayHaveArrived).toBe(false);
    const timedOut = errorsModule.failureFromError(Object.assign(new Error('t'), { name: 'TimeoutError' }), {
      timeoutMs: 1000,
      durationMs: 1000,
    });
    expect(timedOut.mayHaveArrived).toBe(true);
    const reset = errorsModule.failureFromError(Object.assign(new Error('r'), { code: 'ECONNRESET' }), { timeoutMs: 1000, durationMs: 5 });
    expect(reset.mayHaveArrived).toBe(true);
    const refused = errorsModule.failureFromError(Object.assign(new Error('c'), { code: 'ECONNREFUSED' }), {
      timeoutMs: 1000,
      durationMs: 5,
    });
    expect(refused.mayHaveArrived).toBe(false);
  });
});
