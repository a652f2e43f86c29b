// The API key must never appear in an outcome, a message or a log line, whatever the service does.
import { startServiceEmulator, type ServiceEmulator } from '../../../sandbox/service-emulator';
import { createServiceClient } from '../../../src/integrations/service/client';
import type { ServiceClient, ServiceResult } from '../../../src/integrations/service/types';
import { adhocServer, captureLogs, json, type AdhocServer } from './support';

const logs = captureLogs('trace');
let em: ServiceEmulator;
let echo: AdhocServer;
const outcomes: Array<ServiceResult<unknown>> = [];

async function everyCall(client: ServiceClient, key: string): Promise<void> {
  outcomes.push(
    await client.validateKey(key, { shopId: '1', shopName: 'Shop' }),
    await client.checkKey(key),
    await client.listLists(key),
    await client.listCustomFields(key),
    await client.deleteContact(key, 'someone@example.com'),
    await client.sendEvent(key, { event_name: 'e', email: 'someone@example.com', event_attribute: { api_key: key } }),
  );
}

beforeAll(async () => {
  em = await startServiceEmulator({ logger: logs.logger, blockThreshold: 2, blockMs: 10_000 });
  // A hostile service that echoes the key back in every way it can.
  echo = await adhocServer((req, res) => {
    const key = String(req.headers['x-service-api-key'] ?? req.headers.authorization ?? '').replace(/^Bearer /, '');
    const n = echo.seen.length % 6;
    const statuses = [400, 403, 500, 418, 429, 200];
    if (n === 5) return json(res, 200, { success: true, workspace_id: 'ws-1', workspace_name: 'Echo' });
    return json(res, statuses[n]!, { message: `Key ${key} is wrong`, detail: `Key ${key} is blocked` }, { 'retry-after': '1' });
  });
});

afterAll(async () => {
  await em.close();
  await echo.close();
});

it('no outcome, message or log line contains the key', async () => {
  const ws = em.createWorkspace({ rateLimit: 3 });
  const keys = [ws.apiKey];
  const client = createServiceClient({ baseUrl: em.url, webhookUrl: em.url, timeoutMs: 200, logger: logs.logger });
  await everyCall(client, ws.apiKey); // ok, then 429s
  em.setRateLimit(ws.id, 1000);
  for (const mode of ['status400', 'status401', 'status403', 'status406', 'status429', 'status500', 'drop'] as const) {
    em.injectFault({ mode });
    outcomes.push(await client.checkKey(ws.apiKey));
  }
  em.injectFault({ mode: 'delay', delayMs: 1000 });
  outcomes.push(await client.checkKey(ws.apiKey));
  await everyCall(client, 'not-a-valid-key'); // bad requests, then block
  outcomes.push(await client.sendEvent(ws.apiKey, { event_name: '', email: 'x' }));
  outcomes.push(await client.sendEvent(ws.apiKey, { event_name: '', email: 'x' }));
  outcomes.push(await client.sendEvent(ws.apiKey, { event_name: 'fine', email: 'a@example.com' }));
  const revoked = em.createKey(ws.id);
  keys.push(revoked);
  em.revokeKey(revoked);
  await everyCall(client, revoked);
  await client.close();

  const hostileKey = 'sk_live_HOSTILE_0123456789abcdef';
  keys.push(hostileKey);
  const hostile = createServiceClient({ baseUrl: echo.url, webhookUrl: echo.url, timeoutMs: 500, logger: logs.logger });
  await everyCall(hostile, hostileKey);
  await everyCall(hostile, hostileKey);
  // A key that is not a valid header value makes undici throw before sending.
  const badHeaderKey = 'sk_live_BROKEN_0123456789\r\nX-Injected: 1';
  keys.push(badHeaderKey, 'sk_live_BROKEN_0123456789');
  await everyCall(hostile, badHeaderKey);
  await hostile.close();

  const kinds = new Set(outcomes.map((o) => o.kind));
  expect([...kinds].sort()).toEqual(['auth', 'bad_request', 'blocked', 'not_acceptable', 'ok', 'rate_limited', 'retryable']);
  expect(logs.lines.length).toBeGreaterThan(40);
  // The hostile server did echo the key; the redaction is what keeps it out.
  expect(outcomes.some((o) => o.kind !== 'ok' && o.message.includes('[redacted]'))).toBe(true);
  const everything = `${JSON.stringify(outcomes)}\n${logs.text()}\n${JSON.stringify(em.requests())}`;
  for (const key of keys) expect(everything).not.toContain(key);
});
