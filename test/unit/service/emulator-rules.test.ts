// The emulator's own rules, checked over raw HTTP (not through the client it is meant to check).
import { request } from 'undici';
import { startServiceEmulator, type ServiceEmulator } from '../../../sandbox/service-emulator';
import { sleep } from './support';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  text: string;
}

let em: ServiceEmulator;

async function call(
  method: string,
  path: string,
  opts: {
    key?: string;
    auth?: 'header' | 'underscore' | 'bearer';
    accept?: string | null;
    body?: unknown;
    contentType?: string;
    raw?: string;
  } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (opts.accept !== null) headers.accept = opts.accept ?? 'application/json';
  if (opts.key !== undefined) {
    const auth = opts.auth ?? 'header';
    if (auth === 'bearer') headers.authorization = `Bearer ${opts.key}`;
    else headers[auth === 'header' ? 'x-service-api-key' : 'x-service_api_key'] = opts.key;
  }
  let body: string | undefined = opts.raw;
  if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined) headers['content-type'] = opts.contentType ?? 'application/json';
  const res = await request(`${em.url}${path}`, { method: method as 'GET', headers, body });
  const text = await res.body.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body: parsed, text };
}

const send = (key: string, body: unknown): Promise<Reply> => call('POST', '/webhook/send/', { key, body });
const check = (key?: string, extra: Parameters<typeof call>[2] = {}): Promise<Reply> =>
  call('GET', '/webhook/api_key/validate/', { key, ...extra });

beforeAll(async () => {
  em = await startServiceEmulator({ blockThreshold: 0 });
});
afterAll(async () => {
  await em.close();
});
beforeEach(() => em.reset({ all: true }));

describe('authentication', () => {
  it.each(['header', 'underscore', 'bearer'] as const)('accepts the key in the %s form', async (auth) => {
    const { apiKey } = em.createWorkspace();
    expect((await check(apiKey, { auth })).status).toBe(200);
  });

  it('401 for a missing, unknown, malformed or revoked key, with a detail body', async () => {
    const { apiKey, id } = em.createWorkspace();
    const missing = await check();
    expect(missing).toMatchObject({ status: 401, body: { detail: 'Authentication credentials were not provided.' } });
    expect((await check('sk_sandbox_nope')).body).toEqual({ detail: 'Invalid API key.' });
    const tokenForm = await request(`${em.url}/webhook/api_key/validate/`, {
      headers: { accept: 'application/json', authorization: `Token ${apiKey}` },
    });
    expect(tokenForm.statusCode).toBe(401);
    await tokenForm.body.dump();
    const other = em.createKey(id, 'second');
    em.revokeKey(other);
    expect((await check(other)).status).toBe(401);
    expect((await check(apiKey)).status).toBe(200);
    expect(() => em.revokeKey('sk_never_issued')).toThrow();
  });
});

describe('Accept header', () => {
  it.each([
    ['missing', null, 406],
    ['text/html', 'text/html', 406],
    ['json with q=0', 'application/json;q=0', 406],
    ['application/json', 'application/json', 200],
    ['*/*', '*/*', 200],
    ['application/*', 'application/*', 200],
    ['a list naming json', 'text/html, application/json;q=0.9', 200],
  ])('%s → %i', async (_label, accept, status) => {
    const { apiKey } = em.createWorkspace();
    const r = await check(apiKey, { accept });
    expect(r.status).toBe(status);
    if (status === 406) expect(r.body).toEqual({ detail: 'Could not satisfy the request Accept header.' });
  });
});

describe('rate-limit headers are on every response', () => {
  it('on 200, 400, 401, 404, 406, 429 and injected 500', async () => {
    const { apiKey, id } = em.createWorkspace({ rateLimit: 3 });
    const seen: Array<[number, unknown, unknown]> = [];
    const note = (r: Reply): void => {
      seen.push([r.status, r.headers['x-ratelimit-limit'], r.headers['x-ratelimit-remaining']]);
    };
    note(await check(apiKey));
    note(await send(apiKey, { email: 'a@example.com' }));
    note(await check('sk_sandbox_unknown'));
    note(await call('GET', '/nowhere', { key: apiKey }));
    note(await check(apiKey, { accept: null }));
    em.injectFault({ mode: 'status500' });
    note(await check(apiKey));
    note(await check(apiKey));
    note(await check(apiKey));
    expect(seen).toEqual([
      [200, '3', '2'],
      [400, '3', '1'],
      [401, '10', '10'],
      [404, '3', '1'],
      [406, '3', '1'],
      [500, '3', '1'],
      [200, '3', '0'],
      [429, '3', '0'],
    ]);
    expect(em.eventCounts(id)).toEqual({});
  });
});

describe('rate limit: a 1-second sliding window per team', () => {
  it('of 15 quick requests exactly 10 are accepted; after a second requests are accepted again', async () => {
    const { apiKey } = em.createWorkspace();
    const replies = await Promise.all(Array.from({ length: 15 }, () => check(apiKey)));
    const ok = replies.filter((r) => r.status === 200);
    const limited = replies.filter((r) => r.status === 429);
    expect(ok).toHaveLength(10);
    expect(limited).toHaveLength(5);
    expect(ok.map((r) => Number(r.headers['x-ratelimit-remaining'])).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const r of [...ok, ...limited]) expect(r.headers['x-ratelimit-limit']).toBe('10');
    for (const r of limited) {
      expect(r.headers['retry-after']).toBe('1');
      expect(r.headers['x-ratelimit-remaining']).toBe('0');
      expect(r.body.detail).toMatch(/throttled/);
    }
    await sleep(1050);
    // Rejected requests did not count: a full window of 10 is available again.
    const again = await Promise.all(Array.from({ length: 11 }, () => check(apiKey)));
    expect(again.filter((r) => r.status === 200)).toHaveLength(10);
  });

  it('slides rather than resetting on fixed second boundaries', async () => {
    const { apiKey } = em.createWorkspace();
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 5 }, () => check(apiKey)));
    await sleep(500);
    await Promise.all(Array.from({ length: 5 }, () => check(apiKey)));
    expect((await check(apiKey)).status).toBe(429);
    await sleep(Math.max(0, t0 + 1100 - Date.now()));
    // The first five have left the window, the second five have not.
    const later = await Promise.all(Array.from({ length: 6 }, () => check(apiKey)));
    expect(later.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it('is per team: one team being throttled does not affect another; setRateLimit changes the limit', async () => {
    const a = em.createWorkspace();
    const b = em.createWorkspace();
    await Promise.all(Array.from({ length: 12 }, () => check(a.apiKey)));
    expect((await check(a.apiKey)).status).toBe(429);
    expect((await check(b.apiKey)).status).toBe(200);
    em.setRateLimit(b.id, 50);
    const r = await check(b.apiKey);
    expect(r.headers['x-ratelimit-limit']).toBe('50');
    expect(r.headers['x-ratelimit-remaining']).toBe('48');
  });

  it('keys of the same team share the team limit', async () => {
    const ws = em.createWorkspace({ rateLimit: 2 });
    const second = em.createKey(ws.id);
    expect((await check(ws.apiKey)).status).toBe(200);
    expect((await check(second)).status).toBe(200);
    expect((await check(second)).status).toBe(429);
  });

  it('serves 20 workspaces at 400 requests at once', async () => {
    const keys = Array.from({ length: 20 }, () => em.createWorkspace({ rateLimit: 1000 }).apiKey);
    const replies = await Promise.all(
      keys.flatMap((k, i) => Array.from({ length: 20 }, (_, j) => send(k, { event_name: 'bench', email: `c${i}-${j}@example.com` }))),
    );
    expect(replies.every((r) => r.status === 200)).toBe(true);
    expect(em.events({ eventName: 'bench' })).toHaveLength(400);
  });
});

describe('bad requests (400 with a message)', () => {
  it.each([
    ['missing event_name', { email: 'a@example.com' }, 'event_name is required.'],
    ['empty event_name', { event_name: ' ', email: 'a@example.com' }, 'event_name is required.'],
    ['missing email', { event_name: 'e' }, 'email is required.'],
    ['invalid email', { event_name: 'e', email: 'a@b' }, 'email must be a valid email address.'],
    ['numeric email', { event_name: 'e', email: 12 }, 'email must be a valid email address.'],
    [
      'event_attribute an array',
      { event_name: 'e', email: 'a@example.com', event_attribute: [1] },
      'event_attribute must be a JSON object.',
    ],
    [
      'event_attribute a string',
      { event_name: 'e', email: 'a@example.com', event_attribute: 'x' },
      'event_attribute must be a JSON object.',
    ],
    ['event_attribute null', { event_name: 'e', email: 'a@example.com', event_attribute: null }, 'event_attribute must be a JSON object.'],
    ['a JSON array body', [{ event_name: 'e' }], 'Request body must be a JSON object.'],
  ])('send-event with %s', async (_label, body, message) => {
    const { apiKey } = em.createWorkspace();
    expect(await send(apiKey, body)).toMatchObject({ status: 400, body: { message } });
    expect(em.events()).toHaveLength(0);
  });

  it('a non-JSON body, or a non-JSON content type', async () => {
    const { apiKey } = em.createWorkspace();
    expect(await call('POST', '/webhook/send/', { key: apiKey, raw: '{nope' })).toMatchObject({
      status: 400,
      body: { message: 'Request body is not valid JSON.' },
    });
    expect(await call('POST', '/webhook/send/', { key: apiKey, raw: '{}', contentType: 'text/plain' })).toMatchObject({
      status: 400,
      body: { message: 'Content-Type must be application/json.' },
    });
  });

  it('key validation without data.shop_id, and contact delete without a valid email', async () => {
    const { apiKey } = em.createWorkspace();
    expect(
      await call('POST', '/webhook/api_key/validate', { key: apiKey, auth: 'bearer', body: { type: 'shopify', data: {} } }),
    ).toMatchObject({
      status: 400,
      body: { message: 'data.shop_id is required.' },
    });
    expect(await call('POST', '/api/webhook/contact/delete/', { key: apiKey, body: {} })).toMatchObject({
      status: 400,
      body: { message: 'email is required.' },
    });
  });

  it('a body over 1 MB is 413', async () => {
    const { apiKey } = em.createWorkspace();
    const r = await send(apiKey, { event_name: 'e', email: 'a@example.com', blob: 'x'.repeat(1_100_000) });
    expect(r.status).toBe(413);
  });
});

describe('temporary block (403) after repeated bad requests', () => {
  it('blocks the team after N bad requests within the window, for blockMs, counting all its keys', async () => {
    const local = await startServiceEmulator({ blockThreshold: 3, blockMs: 300 });
    try {
      const a = local.createWorkspace();
      const b = local.createWorkspace();
      const second = local.createKey(a.id);
      const post = async (key: string, body: unknown): Promise<number> => {
        const res = await request(`${local.url}/webhook/send/`, {
          method: 'POST',
          headers: { accept: 'application/json', 'content-type': 'application/json', 'x-service-api-key': key },
          body: JSON.stringify(body),
        });
        const text = await res.body.text();
        if (res.statusCode === 403) expect(JSON.parse(text).detail).toMatch(/^You do not have permission to perform this action\./);
        return res.statusCode;
      };
      const good = { event_name: 'e', email: 'a@example.com' };
      expect(await post(a.apiKey, { email: 'x' })).toBe(400);
      expect(await post(second, { email: 'x' })).toBe(400);
      expect(await post(a.apiKey, good)).toBe(200);
      expect(await post(second, { email: 'x' })).toBe(400);
      expect(await post(a.apiKey, good)).toBe(403);
      expect(await post(second, good)).toBe(403);
      expect(await post(b.apiKey, good)).toBe(200);
      expect(local.blockedUntil(a.id)).toEqual(expect.any(Number));
      await sleep(350);
      expect(await post(a.apiKey, good)).toBe(200);
      expect(local.blockedUntil(a.id)).toBeNull();
    } finally {
      await local.close();
    }
  });
});

describe('send-event semantics', () => {
  it('creates unknown events and contacts, merges contact properties, stores attributes, counts in real time', async () => {
    const { apiKey, id } = em.createWorkspace();
    expect(
      await send(apiKey, {
        event_name: 'order_placed',
        email: 'Ada@Example.com',
        first_name: 'Ada',
        tags: ['vip'],
        event_attribute: { order_id: '1' },
      }),
    ).toMatchObject({ status: 200, body: { success: true } });
    await send(apiKey, { event_name: 'order_placed', email: 'ada@example.com', last_name: 'Lovelace', first_name: 'Ada L.' });
    await send(apiKey, { event_name: 'order_paid', email: 'bob@example.com' });
    expect(em.eventCounts(id)).toEqual({ order_placed: 2, order_paid: 1 });
    const ada = em.contacts(id).find((c) => c.email === 'ada@example.com');
    expect(ada?.properties).toEqual({ first_name: 'Ada L.', tags: ['vip'], last_name: 'Lovelace' });
    expect(
      em
        .contacts(id)
        .map((c) => c.email)
        .sort(),
    ).toEqual(['ada@example.com', 'bob@example.com']);
    const events = em.events({ workspaceId: id, email: 'ADA@example.com' });
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({
      event_name: 'order_placed',
      event_attribute: { order_id: '1' },
      contactProperties: { first_name: 'Ada', tags: ['vip'] },
    });
    expect(events[1]!.event_attribute).toEqual({});
    expect(events[0]!.receivedAt).toBeGreaterThan(Date.now() - 5000);
    expect(em.events({ eventName: 'order_paid' })).toHaveLength(1);
  });

  it("keeps each team's data apart", async () => {
    const a = em.createWorkspace();
    const b = em.createWorkspace();
    await send(a.apiKey, { event_name: 'e', email: 'a@example.com' });
    expect(em.events({ workspaceId: b.id })).toEqual([]);
    expect(em.contacts(b.id)).toEqual([]);
  });
});

describe('other endpoints', () => {
  it('key validation: POST returns the workspace; GET returns success on both path forms', async () => {
    const { apiKey, id, name } = em.createWorkspace({ name: 'Acme' });
    expect(
      await call('POST', '/webhook/api_key/validate', {
        key: apiKey,
        auth: 'bearer',
        body: { type: 'shopify', data: { shop_id: '1', shop_name: 'acme' } },
      }),
    ).toMatchObject({ status: 200, body: { success: true, workspace_id: id, workspace_name: name } });
    expect(await check(apiKey)).toMatchObject({ status: 200, body: { success: true } });
    expect(await call('GET', '/api/webhook/api_key/validate/', { key: apiKey })).toMatchObject({ status: 200, body: { success: true } });
  });

  it('lists on both path forms and custom fields, as {count, next, previous, results}', async () => {
    const { apiKey, id } = em.createWorkspace();
    const lists = await call('GET', '/webhook/lists/', { key: apiKey });
    expect(lists.body).toEqual({
      count: 2,
      next: null,
      previous: null,
      results: [
        { id: `${id}-list-1`, name: 'Newsletter', contact_count: 0 },
        { id: `${id}-list-2`, name: 'VIP customers', contact_count: 0 },
      ],
    });
    expect((await call('GET', '/api/webhook/lists', { key: apiKey })).body).toEqual(lists.body);
    const fields = await call('GET', '/api/webhook/customfields/', { key: apiKey });
    expect(fields.body.results).toContainEqual({ key: 'first_name', label: 'First name', type: 'text' });
    expect((await call('GET', '/webhook/customfields/', { key: apiKey })).status).toBe(404);
  });

  it('contact delete: 200 with a message, then 404', async () => {
    const { apiKey, id } = em.createWorkspace();
    await send(apiKey, { event_name: 'e', email: 'gone@example.com' });
    expect(await call('POST', '/api/webhook/contact/delete/', { key: apiKey, body: { email: 'GONE@example.com' } })).toMatchObject({
      status: 200,
      body: { message: 'User deleted successfully' },
    });
    expect(await call('POST', '/api/webhook/contact/delete/', { key: apiKey, body: { email: 'gone@example.com' } })).toMatchObject({
      status: 404,
      body: { detail: 'Contact not found.' },
    });
    expect(em.deletedContacts(id)).toEqual(['gone@example.com']);
    expect(em.events({ workspaceId: id })).toHaveLength(1);
  });

  it('unknown path 404, wrong method 405', async () => {
    const { apiKey } = em.createWorkspace();
    expect((await call('GET', '/api/webhook/nothing/', { key: apiKey })).status).toBe(404);
    const r = await call('GET', '/webhook/send/', { key: apiKey });
    expect(r).toMatchObject({ status: 405, headers: { allow: 'POST' } });
  });
});

describe('fault injection', () => {
  it('count: the next N requests fail, then normal service resumes', async () => {
    const { apiKey } = em.createWorkspace();
    em.injectFault({ mode: 'status500', count: 2 });
    expect((await check(apiKey)).status).toBe(500);
    expect((await check(apiKey)).status).toBe(500);
    expect((await check(apiKey)).status).toBe(200);
  });

  it('forMs: every request fails for the period', async () => {
    const { apiKey } = em.createWorkspace({ rateLimit: 100 });
    em.injectFault({ mode: 'status429', forMs: 200 });
    const r = await check(apiKey);
    expect(r).toMatchObject({ status: 429, headers: { 'retry-after': '1', 'x-ratelimit-remaining': '0' } });
    expect((await check(apiKey)).status).toBe(429);
    await sleep(250);
    expect((await check(apiKey)).status).toBe(200);
  });

  it('path filter: only matching requests are affected; clearFaults removes faults', async () => {
    const { apiKey } = em.createWorkspace();
    em.injectFault({ mode: 'status403', count: 5, path: '/webhook/send' });
    expect((await check(apiKey)).status).toBe(200);
    expect(await send(apiKey, { event_name: 'e', email: 'a@example.com' })).toMatchObject({
      status: 403,
      body: { detail: expect.any(String) },
    });
    em.clearFaults();
    expect((await send(apiKey, { event_name: 'e', email: 'a@example.com' })).status).toBe(200);
  });

  it.each([
    ['status401', 401],
    ['status400', 400],
    ['status406', 406],
  ] as const)('%s answers %i', async (mode, status) => {
    const { apiKey } = em.createWorkspace();
    em.injectFault({ mode });
    expect((await check(apiKey)).status).toBe(status);
  });

  it.each([
    ['status404', 404],
    ['status408', 408],
    ['status425', 425],
    ['status503', 503],
  ] as const)('%s answers %i in JSON, with the rate headers', async (mode, status) => {
    const { apiKey } = em.createWorkspace();
    em.injectFault({ mode, path: '/webhook/send' });
    const r = await send(apiKey, { event_name: 'e', email: 'a@example.com' });
    expect(r).toMatchObject({ status, body: { detail: expect.any(String) }, headers: { 'x-ratelimit-limit': '10' } });
  });

  it('success_false answers 200 {"success": false} and records no event', async () => {
    const { apiKey, id } = em.createWorkspace();
    em.injectFault({ mode: 'success_false' });
    expect(await send(apiKey, { event_name: 'e', email: 'a@example.com' })).toMatchObject({
      status: 200,
      body: { success: false, message: expect.any(String) },
    });
    expect(em.eventCounts(id)).toEqual({});
  });

  it('proxy404, html200 and redirect307 answer as something in front of the service: no JSON, no rate headers', async () => {
    const { apiKey } = em.createWorkspace();
    em.injectFault({ mode: 'proxy404' });
    const notFound = await send(apiKey, { event_name: 'e', email: 'a@example.com' });
    expect(notFound).toMatchObject({ status: 404, body: undefined, headers: { 'content-type': 'text/html' } });
    expect(notFound.headers['x-ratelimit-limit']).toBeUndefined();
    em.injectFault({ mode: 'html200' });
    const page = await send(apiKey, { event_name: 'e', email: 'a@example.com' });
    expect(page).toMatchObject({ status: 200, body: undefined, headers: { 'content-type': 'text/html' } });
    expect(page.text).toMatch(/^<!doctype html>/);
    em.injectFault({ mode: 'redirect307', location: 'http://elsewhere.example/webhook/send/' });
    const moved = await send(apiKey, { event_name: 'e', email: 'a@example.com' });
    expect(moved).toMatchObject({ status: 307, headers: { location: 'http://elsewhere.example/webhook/send/' } });
    expect(
      em
        .requests()
        .slice(-3)
        .map((r) => [r.status, r.fault]),
    ).toEqual([
      [404, 'proxy404'],
      [200, 'html200'],
      [307, 'redirect307'],
    ]);
  });

  it('delay: the answer comes after delayMs, and is then processed normally', async () => {
    const { apiKey, id } = em.createWorkspace();
    em.injectFault({ mode: 'delay', delayMs: 200 });
    const t0 = Date.now();
    expect((await send(apiKey, { event_name: 'slow', email: 'a@example.com' })).status).toBe(200);
    // not before the delay: a timer never fires early
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    expect(em.eventCounts(id)).toEqual({ slow: 1 });
  });

  it('drop: the connection is closed without an answer, and recorded with status 0', async () => {
    const { apiKey } = em.createWorkspace();
    em.injectFault({ mode: 'drop' });
    await expect(check(apiKey)).rejects.toThrow();
    expect(em.requests().at(-1)).toMatchObject({ status: 0, fault: 'drop' });
    expect((await check(apiKey)).status).toBe(200);
  });
});

describe('recorded requests', () => {
  it('keep method, path, status, team and headers with the key masked', async () => {
    const { apiKey, id } = em.createWorkspace();
    await check(apiKey, { auth: 'underscore' });
    await check(apiKey, { auth: 'bearer' });
    const [a, b] = em.requests();
    expect(a).toMatchObject({
      method: 'GET',
      path: '/webhook/api_key/validate/',
      status: 200,
      workspaceId: id,
      headers: { 'x-service_api_key': '[masked]' },
    });
    expect(b!.headers.authorization).toBe('Bearer [masked]');
    expect(JSON.stringify(em.requests())).not.toContain(apiKey);
  });
});

describe('/_sandbox over HTTP', () => {
  const sb = async (method: string, path: string, body?: unknown): Promise<Reply> => {
    const res = await request(`${em.url}/_sandbox${path}`, {
      method: method as 'GET',
      body: body === undefined ? undefined : JSON.stringify(body),
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
    });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
  };

  it('creates workspaces and keys, revokes keys, sets limits, without auth and without rate limit', async () => {
    const created = await sb('POST', '/workspaces', { name: 'Dev shop' });
    expect(created).toMatchObject({
      status: 201,
      body: { workspace_id: expect.any(String), api_key: expect.any(String), workspace_name: 'Dev shop' },
    });
    const { workspace_id: wsId, api_key: key } = created.body;
    expect((await check(key)).status).toBe(200);
    const extra = await sb('POST', '/keys', { workspace_id: wsId, name: 'worker' });
    expect(extra.status).toBe(201);
    expect((await sb('DELETE', `/keys/${encodeURIComponent(extra.body.api_key)}`)).status).toBe(204);
    expect((await check(extra.body.api_key)).status).toBe(401);
    expect((await sb('DELETE', '/keys/sk_unknown')).status).toBe(404);
    expect(await sb('PUT', `/workspaces/${wsId}/rate-limit`, { per_second: 3 })).toMatchObject({ status: 200, body: { rate_limit: 3 } });
    const many = await Promise.all(Array.from({ length: 15 }, () => sb('GET', '/workspaces')));
    expect(many.every((r) => r.status === 200)).toBe(true);
    const ws = many[0]!.body.workspaces.find((w: { workspace_id: string }) => w.workspace_id === wsId);
    expect(ws).toMatchObject({ workspace_name: 'Dev shop', rate_limit: 3 });
    expect(JSON.stringify(many[0]!.body)).not.toContain(key);
    expect((await sb('POST', '/workspaces', { id: wsId })).status).toBe(409);
  });

  it('inspects events, contacts and requests, injects and clears faults, resets', async () => {
    const { apiKey, id } = em.createWorkspace();
    await send(apiKey, { event_name: 'e1', email: 'a@example.com', city: 'Oslo', event_attribute: { k: 1 } });
    expect((await sb('GET', `/events?workspace_id=${id}&event_name=e1`)).body.events).toEqual([
      expect.objectContaining({ email: 'a@example.com', event_attribute: { k: 1 } }),
    ]);
    expect((await sb('GET', '/contacts')).body.contacts).toEqual([
      expect.objectContaining({ email: 'a@example.com', properties: { city: 'Oslo' } }),
    ]);
    const reqs = await sb('GET', `/requests?workspace_id=${id}`);
    expect(reqs.body.requests).toHaveLength(1);
    expect(reqs.text).not.toContain(apiKey);
    expect((await sb('GET', `/workspaces/${id}/event-counts`)).body).toEqual({ event_counts: { e1: 1 } });
    expect((await sb('POST', '/faults', { mode: 'status500', count: 1, path: '/webhook/send' })).status).toBe(201);
    expect((await sb('POST', '/faults', { mode: 'explode' })).status).toBe(400);
    expect((await sb('GET', '/faults')).body.faults).toHaveLength(1);
    expect((await send(apiKey, { event_name: 'e1', email: 'a@example.com' })).status).toBe(500);
    await sb('POST', '/faults', { mode: 'status500', count: 5 });
    expect((await sb('DELETE', '/faults')).status).toBe(204);
    expect((await check(apiKey)).status).toBe(200);
    expect((await sb('POST', '/reset')).status).toBe(204);
    expect((await sb('GET', '/events')).body.events).toEqual([]);
    expect((await check(apiKey)).status).toBe(200);
    await sb('POST', '/reset', { all: true });
    expect((await check(apiKey)).status).toBe(401);
  });
});
