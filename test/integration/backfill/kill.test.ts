// A real crash: the app runs as a child process, is SIGKILLed in the middle of an import (the
// result file half read, messages in flight), and is started again on the same database. The
// import completes, nothing is lost, and duplicates are at most the messages in flight (and the
// sends that got no answer, which may have been accepted).
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createDb } from '../../../src/db/client';
import { startFakeShop, type FakeShop } from '../../../sandbox/fake-shop';
import { enableBulkOperations, type FakeBulk } from '../../../sandbox/fake-shop/bulk';
import { startServiceEmulator, type ServiceEmulator } from '../../../sandbox/service-emulator';
import { createTestDatabase, testProvider, type TestDatabase } from '../../helpers/db';
import { API_KEY, API_SECRET } from '../../helpers/stack';
import { receivedCounts } from './harness';

jest.setTimeout(90_000);

const SHOP = 'crash-store.myshopify.com';
const ROOT = path.join(__dirname, '..', '..', '..');
const CUSTOMERS = 1_000;
const ORDERS = 1_000;

describe(`an import survives SIGKILL (${testProvider})`, () => {
  let emulator: ServiceEmulator;
  let shop: FakeShop;
  let bulk: FakeBulk;
  let database: TestDatabase;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    emulator = await startServiceEmulator({ host: '127.0.0.1', rateLimit: 1_000 });
    shop = await startFakeShop({
      apiKey: API_KEY,
      apiSecret: API_SECRET,
      host: '127.0.0.1',
      shops: [{ domain: SHOP, id: '9001', name: 'Crash Store' }],
    });
    bulk = await enableBulkOperations(shop, { customers: CUSTOMERS, orders: ORDERS, completeAfterMs: 100 });
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await bulk.close();
    await Promise.all([emulator.close(), shop.close()]);
    await database.drop();
  });

  function startApp(): Promise<{ child: ChildProcess; url: string }> {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'child-app.ts')], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        SANDBOX: '1',
        PORT: '0',
        LOG_LEVEL: 'error',
        DATABASE_URL: database.url,
        SHOPIFY_API_KEY: API_KEY,
        SHOPIFY_API_SECRET: API_SECRET,
        SERVICE_BASE_URL: emulator.url,
        SHOPIFY_ADMIN_ORIGIN: shop.url,
        // in-flight messages are given back when their claim lock expires (timeout + 5 s)
        SERVICE_TIMEOUT_MS: '1000',
        BACKFILL_LEASE_MS: '2000',
        BACKFILL_MAX_QUEUED: '300',
        BACKFILL_BATCH_SIZE: '100',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    return new Promise((resolve, reject) => {
      let out = '';
      let err = '';
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /READY (\S+)/.exec(out);
        if (m) resolve({ child, url: m[1]! });
      });
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      child.once('exit', (code) => reject(new Error(`child exited (${code}) before it was ready: ${err.slice(-2000)}`)));
    });
  }

  const api = async (url: string, method: string, route: string, body?: unknown) => {
    const res = await fetch(`${url}${route}`, {
      method,
      headers: { authorization: `Bearer ${shop.mintSessionToken(SHOP)}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as any };
  };

  async function until<T>(check: () => Promise<T | null | false> | T | null | false, timeoutMs: number, what: string): Promise<T> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const v = await check();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('completes after a restart, loses nothing, and sends at most the in-flight (or unanswered) messages twice', async () => {
    const first = await startApp();
    const ws = emulator.createWorkspace({ name: 'Crash workspace', rateLimit: 1_000 });
    expect((await api(first.url, 'PUT', '/api/connection', { api_key: ws.apiKey })).status).toBe(200);
    expect((await api(first.url, 'POST', '/api/backfill', {})).status).toBe(202);

    // kill it while orders are being read and sent
    await until(() => emulator.events({ workspaceId: ws.id, eventName: 'order_imported' }).length >= 200, 30_000, 'orders being delivered');
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));

    const db = await createDb(database.url, { poolSize: 2 });
    const inFlight = await db.outboxMessage.count({ where: { status: 'delivering' } });
    const atKill = await db.backfill.findFirstOrThrow();
    // what the dead process held (its lane's lease on the shop, its claims' locks) runs out at
    // once, as it would after its time (10 s for a lease): the next process takes over through
    // that expiry, without the test waiting it out
    const past = new Date(Date.now() - 1);
    await db.shopDue.updateMany({ where: { leasedBy: { not: null } }, data: { leasedUntil: past } });
    await db.outboxMessage.updateMany({ where: { status: 'delivering' }, data: { lockedUntil: past } });
    await db.$disconnect();
    expect(atKill.state).toBe('running');
    expect(atKill.processed).toBeLessThan(CUSTOMERS + ORDERS);

    const second = await startApp();
    const done = await until(
      async () => {
        const b = (await api(second.url, 'GET', '/api/backfill')).body;
        return b?.state === 'completed' && b.delivered === b.queued ? b : null;
      },
      60_000,
      'import completed after the restart',
    );
    expect(done).toMatchObject({ processed: CUSTOMERS + ORDERS, total: CUSTOMERS + ORDERS, queued: CUSTOMERS + ORDERS });

    const counts = receivedCounts({ emulator } as never, ws.id, ['customer_imported', 'order_imported']);
    const expected = [
      ...Array.from({ length: CUSTOMERS }, (_, i) => `import:customer:${7_000_000_000_000 + i + 1}`),
      ...Array.from({ length: ORDERS }, (_, i) => `import:order:${5_000_000_000_000 + i + 1}`),
    ];
    expect(expected.filter((id) => !counts.has(id))).toEqual([]);
    const duplicates = [...counts.values()].reduce((n, c) => n + c - 1, 0);
    // the other sends the service may have accepted without our knowing: no answer within the
    // timeout (1 s here), or the connection closed after the request was written. They are sent
    // again by design (the service takes no idempotency key); CI's load once timed out 30.
    const after = await createDb(database.url, { poolSize: 2 });
    const unanswered = await after.deliveryAttempt.count({
      where: {
        outcome: 'retryable',
        statusCode: null,
        OR: [{ error: { contains: 'did not answer within' } }, { error: { contains: 'closed before a response' } }],
      },
    });
    await after.$disconnect();
    process.stdout.write(
      `\n  killed at ${atKill.processed} of ${CUSTOMERS + ORDERS} read; in flight ${inFlight}; sends unanswered ${unanswered}; duplicates ${duplicates}\n`,
    );
    expect(duplicates).toBeLessThanOrEqual(inFlight + unanswered);
    // the second process resumed the file where the first stopped, with a Range request
    expect(bulk.downloads().some((d) => d.status === 206)).toBe(true);
    second.child.kill('SIGTERM');
    await new Promise((r) => second.child.once('exit', r));
  });
});
