// The client against the emulator: every endpoint, every error status, timeouts and drops.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { startServiceEmulator, type FaultMode, type ServiceEmulator } from '../../../sandbox/service-emulator';
import { createServiceClient } from '../../../src/integrations/service/client';
import type { ServiceClient, ServiceResult } from '../../../src/integrations/service/types';
import { captureLogs, sleep, type CapturedLogs } from './support';

const TIMEOUT_MS = 300;

let em: ServiceEmulator;
let client: ServiceClient;
let logs: CapturedLogs;
let key: string;
let wsId: string;

beforeAll(async () => {
  logs = captureLogs();
  em = await startServiceEmulator({ blockThreshold: 3, blockMs: 400 });
  client = createServiceClient({ baseUrl: em.url, webhookUrl: em.url, timeoutMs: TIMEOUT_MS, logger: logs.logger });
});

afterAll(async () => {
  await client.close();
  await em.close();
});

beforeEach(() => {
  em.reset({ all: true });
  const ws = em.createWorkspace({ name: 'Contract shop', rateLimit: 1000 });
  key = ws.apiKey;
  wsId = ws.id;
  logs.lines.length = 0;
});

const endpoints: Array<[string, (k: string) => Promise<ServiceResult<unknown>>]> = [
  ['validateKey', (k) => client.validateKey(k, { shopId: '42', shopName: 'Contract shop' })],
  ['checkKey', (k) => client.checkKey(k)],
  ['listLists', (k) => client.listLists(k)],
  ['listCustomFields', (k) => client.listCustomFields(k)],
  ['deleteContact', (k) => client.deleteContact(k, 'someone@example.com')],
  ['sendEvent', (k) => client.sendEvent(k, { event_name: 'order_placed', email: 'someone@example.com' })],
];

describe('client against the emulator: successes', () => {
  it('validates a key with Bearer and returns the workspace, binding the shop', async () => {
    const r = await client.validateKey(key, { shopId: '42', shopName: 'Contract shop' });
    expect(r).toMatchObject({ kind: 'ok', status: 200, value: { workspaceId: wsId, workspaceName: 'Contract shop' } });
    expect(r.rate).toEqual({ limit: 1000, remaining: 999 });
    expect(em.shops(wsId)).toEqual({ 42: 'Contract shop' });
    const req = em.requests().at(-1)!;
    expect(req).toMatchObject({ method: 'POST', path: '/webhook/api_key/validate', status: 200 });
    expect(req.headers.authorization).toBe('Bearer [masked]');
    expect(req.headers['x-service-api-key']).toBeUndefined();
    expect(req.headers.accept).toBe('application/json');
    expect(req.headers['content-type']).toBe('application/json');
  });

  it('checks a key with X-SERVICE-API-KEY, no body and no Content-Type', async () => {
    const r = await client.checkKey(key);
    expect(r).toMatchObject({ kind: 'ok', status: 200 });
    const req = em.requests().at(-1)!;
    expect(req).toMatchObject({ method: 'GET', path: '/webhook/api_key/validate/' });
    expect(req.headers['x-service-api-key']).toBe('[masked]');
    expect(req.headers.authorization).toBeUndefined();
    expect(req.headers['content-type']).toBeUndefined();
    expect(req.headers.accept).toBe('application/json');
  });

  it('lists the workspace lists, normalised with the raw item kept', async () => {
    em.setLists(wsId, [
      { id: 'L1', name: 'Buyers' },
      { id: 'L2', name: 'Lapsed' },
    ]);
    const r = await client.listLists(key);
    if (r.kind !== 'ok') throw new Error(r.message);
    expect(r.value.map(({ id, name }) => ({ id, name }))).toEqual([
      { id: 'L1', name: 'Buyers' },
      { id: 'L2', name: 'Lapsed' },
    ]);
    expect(r.value[0]!.raw).toEqual({ id: 'L1', name: 'Buyers', contact_count: 0 });
    expect(em.requests().at(-1)!.path).toBe('/webhook/lists/');
  });

  it('lists the custom fields with key, label and type', async () => {
    const r = await client.listCustomFields(key);
    if (r.kind !== 'ok') throw new Error(r.message);
    expect(r.value.map(({ key: k, label, type }) => ({ k, label, type }))).toContainEqual({
      k: 'first_name',
      label: 'First name',
      type: 'text',
    });
    expect(r.value.length).toBeGreaterThanOrEqual(2);
    expect(em.requests().at(-1)!.path).toBe('/api/webhook/customfields/');
  });

  it('sends an event whose attributes and contact properties reach the service', async () => {
    const r = await client.sendEvent(key, {
      event_name: 'order_placed',
      email: 'Ada@Example.com',
      first_name: 'Ada',
      event_attribute: { order_id: '1001', total_price: 12.5 },
    });
    expect(r).toMatchObject({ kind: 'ok', status: 200, value: undefined });
    const [ev] = em.events({ workspaceId: wsId });
    expect(ev).toMatchObject({
      event_name: 'order_placed',
      email: 'ada@example.com',
      event_attribute: { order_id: '1001', total_price: 12.5 },
      contactProperties: { first_name: 'Ada' },
    });
    expect(em.contacts(wsId)).toEqual([expect.objectContaining({ email: 'ada@example.com', properties: { first_name: 'Ada' } })]);
    expect(em.eventCounts(wsId)).toEqual({ order_placed: 1 });
  });

  it('tells the caller the moment a request is written, before the service has it, once per request', async () => {
    const sent: Array<[string, number]> = [];
    const before = Date.now();
    await client.sendEvent(key, { event_name: 'order_placed', email: 'ada@example.com' }, { onSent: (at) => sent.push(['send', at]) });
    await client.deleteContact(key, 'ada@example.com', { onSent: (at) => sent.push(['delete', at]) });
    const arrived = em
      .requests()
      .filter((r) => r.workspaceId === wsId)
      .map((r) => r.at);
    expect(sent.map(([what]) => what)).toEqual(['send', 'delete']);
    expect(sent[0]![1]).toBeGreaterThanOrEqual(before);
    expect(sent[0]![1]).toBeLessThanOrEqual(arrived[0]!);
    expect(sent[1]![1]).toBeLessThanOrEqual(arrived[1]!);
  });

  it('deletes a contact, and treats a second delete (404) as already gone', async () => {
    await client.sendEvent(key, { event_name: 'x', email: 'gone@example.com' });
    expect(await client.deleteContact(key, 'gone@example.com')).toMatchObject({ kind: 'ok', status: 200, value: { alreadyGone: false } });
    expect(await client.deleteContact(key, 'gone@example.com')).toMatchObject({ kind: 'ok', status: 404, value: { alreadyGone: true } });
    expect(em.deletedContacts(wsId)).toEqual(['gone@example.com']);
    expect(em.contacts(wsId)).toEqual([]);
  });
});

describe('client against the emulator: real error statuses', () => {
  it('400: a body the service refuses is bad_request with the service message', async () => {
    const r = await client.sendEvent(key, { event_name: 'x', email: 'not-an-email' });
    expect(r).toMatchObject({ kind: 'bad_request', status: 400, message: 'email must be a valid email address.' });
    expect(r.rate).toEqual({ limit: 1000, remaining: 999 });
  });

  it('401: an unknown key is auth, reporting the default limit', async () => {
    const r = await client.checkKey('sk_sandbox_unknown_key_0000');
    expect(r).toMatchObject({ kind: 'auth', status: 401, rate: { limit: 10, remaining: 10 } });
  });

  it('401: a revoked key is auth', async () => {
    const second = em.createKey(wsId, 'worker');
    expect((await client.checkKey(second)).kind).toBe('ok');
    em.revokeKey(second);
    expect(await client.sendEvent(second, { event_name: 'x', email: 'a@example.com' })).toMatchObject({ kind: 'auth', status: 401 });
    expect((await client.checkKey(key)).kind).toBe('ok');
  });

  it('403: repeated bad requests block the team with the service detail, then the block lifts', async () => {
    for (let i = 0; i < 3; i += 1)
      expect((await client.sendEvent(key, { event_name: '', email: 'a@example.com' })).kind).toBe('bad_request');
    const r = await client.sendEvent(key, { event_name: 'ok', email: 'a@example.com' });
    expect(r).toMatchObject({ kind: 'blocked', status: 403 });
    expect(r.kind !== 'ok' && r.message).toMatch(/permission/);
    await sleep(450);
    expect((await client.sendEvent(key, { event_name: 'ok', email: 'a@example.com' })).kind).toBe('ok');
  });

  it('429: beyond the per-team limit is rate_limited with Retry-After and rate info', async () => {
    em.setRateLimit(wsId, 2);
    expect((await client.checkKey(key)).kind).toBe('ok');
    expect(await client.checkKey(key)).toMatchObject({ kind: 'ok', rate: { limit: 2, remaining: 0 } });
    const r = await client.checkKey(key);
    expect(r).toMatchObject({ kind: 'rate_limited', status: 429, retryAfterMs: 1000, rate: { limit: 2, remaining: 0 } });
  });

  it('406 is not_acceptable and is logged at error level', async () => {
    em.injectFault({ mode: 'status406' });
    const r = await client.listLists(key);
    expect(r).toMatchObject({ kind: 'not_acceptable', status: 406 });
    expect(logs.levels()).toContain(50);
  });

  it('500 is retryable', async () => {
    em.injectFault({ mode: 'status500' });
    expect(await client.sendEvent(key, { event_name: 'x', email: 'a@example.com' })).toMatchObject({ kind: 'retryable', status: 500 });
    expect(em.events()).toHaveLength(0);
  });

  it('a slow answer times out as retryable at timeoutMs', async () => {
    // the answer comes at 2 s: a client that waited for it would see it, 'ok'
    em.injectFault({ mode: 'delay', delayMs: 2000 });
    const r = await client.sendEvent(key, { event_name: 'x', email: 'a@example.com' });
    expect(r.kind).toBe('retryable');
    expect(r.kind !== 'ok' && r.message).toBe(`The email service did not answer within ${TIMEOUT_MS} ms.`);
    // written, unanswered: the service may have accepted it
    expect(r.kind !== 'ok' && r.mayHaveArrived).toBe(true);
    // not before its timeout: a timer never fires early
    expect(r.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect((await client.checkKey(key)).kind).toBe('ok');
  });

  it('a dropped connection is retryable, and the pool recovers', async () => {
    em.injectFault({ mode: 'drop' });
    const r = await client.sendEvent(key, { event_name: 'x', email: 'a@example.com' });
    expect(r).toMatchObject({ kind: 'retryable', message: 'The connection to the email service was closed before a response arrived.' });
    expect(r.kind !== 'ok' && r.status).toBeUndefined();
    expect((await client.sendEvent(key, { event_name: 'x', email: 'a@example.com' })).kind).toBe('ok');
  });

  it('a service that is not listening is retryable', async () => {
    const down = await startServiceEmulator();
    const url = down.url;
    await down.close();
    const c = createServiceClient({ baseUrl: url, webhookUrl: url, timeoutMs: TIMEOUT_MS, logger: logs.logger });
    const r = await c.checkKey(key);
    expect(r).toMatchObject({ kind: 'retryable', message: 'Could not connect to the email service (ECONNREFUSED).' });
    await c.close();
  });
});

const injected: Array<[FaultMode, string, number]> = [
  ['status400', 'bad_request', 400],
  ['status401', 'auth', 401],
  ['status403', 'blocked', 403],
  ['status406', 'not_acceptable', 406],
  ['status429', 'rate_limited', 429],
  ['status500', 'retryable', 500],
];

describe.each(endpoints)('%s classifies every error status the emulator can give', (_name, call) => {
  it.each(injected)('%s → %s', async (mode, kind, status) => {
    em.injectFault({ mode });
    const r = await call(key);
    expect(r).toMatchObject({ kind, status });
    expect(r.rate.limit).toBe(1000);
    expect(r.kind !== 'ok' && r.message.length).toBeGreaterThan(10);
  });

  it('drop → retryable without a status', async () => {
    em.injectFault({ mode: 'drop' });
    const r = await call(key);
    expect(r.kind).toBe('retryable');
    expect(r.kind !== 'ok' && r.status).toBeUndefined();
  });

  it('an invalid key → auth', async () => {
    expect(await call('sk_sandbox_not_a_real_key')).toMatchObject({ kind: 'auth', status: 401 });
  });
});

/** A server in a process of its own, which prints the port it listens on (127.0.0.1). */
async function listeningChild(command: string, args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => child.stdout!.once('data', (d: Buffer) => resolve(String(d).trim())));
  return { child, url: `http://127.0.0.1:${port}` };
}

// The answer must come from another process: one in this process could not answer while the
// event loop is held.
describe('an answer that arrived while the event loop was held past the deadline', () => {
  let child: ChildProcess;
  let url: string;
  beforeAll(async () => {
    // answers every request after 100 ms, as the service accepts an event
    const code = `require('node:http').createServer((q, r) => { q.resume(); q.on('end', () => setTimeout(() => r.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 100)); })
      .listen(0, '127.0.0.1', function () { console.log(this.address().port); });`;
    ({ child, url } = await listeningChild(process.execPath, ['-e', code]));
  });
  afterAll(() => {
    child.kill();
  });

  it('is read, not thrown away as a timeout (which would send the accepted event again)', async () => {
    const c = createServiceClient({ baseUrl: url, webhookUrl: url, timeoutMs: TIMEOUT_MS, logger: logs.logger });
    try {
      expect((await c.sendEvent('sk_sandbox_any', { event_name: 'x', email: 'a@example.com' })).kind).toBe('ok'); // connected
      const sending = c.sendEvent('sk_sandbox_any', { event_name: 'x', email: 'a@example.com' });
      await sleep(30); // written; the answer comes at 100 ms, the deadline is at 300
      // the loop held past the deadline, with the answer waiting in the socket. Held in a check-
      // phase callback, as an I/O callback of the app would be: the next turn then starts with
      // the timers (held in a timer callback, libuv would see them due only a turn later)
      await new Promise<void>((resolve) =>
        setImmediate(() => {
          const held = Date.now();
          while (Date.now() - held < 3 * TIMEOUT_MS);
          resolve();
        }),
      );
      expect(await sending).toMatchObject({ kind: 'ok', status: 200 });
    } finally {
      await c.close();
    }
  });
});

// A listener that never accepts, its queue full: a connection attempt waits unanswered, as at a
// firewall that drops packets. (Node accepts by itself, hence Python, on every machine here.)
describe('a service that takes no connection in time', () => {
  let child: ChildProcess;
  let url: string;
  let filler: net.Socket;
  beforeAll(async () => {
    const code =
      'import socket, time\ns = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)\nprint(s.getsockname()[1], flush=True)\ntime.sleep(120)';
    ({ child, url } = await listeningChild('python3', ['-c', code]));
    // the one connection the queue holds: the next ones get no answer
    filler = net.connect(Number(new URL(url).port), '127.0.0.1');
    await new Promise((resolve) => filler.once('connect', resolve));
  });
  afterAll(() => {
    filler.destroy();
    child.kill();
  });

  it('is retryable, and not counted as a send the service may have (it never left)', async () => {
    const c = createServiceClient({ baseUrl: url, webhookUrl: url, timeoutMs: TIMEOUT_MS, logger: logs.logger });
    try {
      const r = await c.sendEvent('sk_sandbox_any', { event_name: 'x', email: 'a@example.com' });
      expect(r).toMatchObject({
        kind: 'retryable',
        mayHaveArrived: false,
        message: `Could not connect to the email service within ${TIMEOUT_MS} ms.`,
      });
      // not before its timeout: a timer never fires early
      expect(r.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    } finally {
      await c.close();
    }
  });
});
