// The app as a real process, SIGKILLed every few seconds while it drains 1,500 messages. Every
// event must arrive. A message sent but not yet recorded when the process dies is sent again
// by the next one (at-least-once): duplicates are bounded by the messages in flight at the
// kills, counted from the database right after each kill. What a killed process held (its lane's
// lease on the shop, its claims' locks) is then let run out at once, as it would after its time
// (10 s for a lease): the next process takes over through the same expiry, without the test
// waiting it out.
import { randomUUID } from 'node:crypto';
import { createDb, type Db } from '../../src/db/client';
import { applyMigrations } from '../../src/db/migrate';
import { startFakeShop, type FakeShop } from '../../sandbox/fake-shop';
import { startServiceEmulator, type ServiceEmulator } from '../../sandbox/service-emulator';
import { createTestDatabase, testProvider, type TestDatabase } from '../helpers/db';
import { spawnApp, type AppProcess } from '../helpers/process';
import { account, arrivals, formatCounts, queueOrders, report, sleep } from './support';

const SHOP = 'kill-store.myshopify.com';
const API_KEY = 'test-client-id';
const API_SECRET = 'test-client-secret-0123456789';
const MESSAGES = 1500;
const LIMIT = 200;
// how long each incarnation lives before its SIGKILL, cycling. The first three add up to 7.5 s, in
// which the pacer lets at most 7.5 × 1000 / ((1000 + 40) / 200) = 1,442 sends through: at least
// three kills come before the drain is done.
const LIFETIMES_MS = [2500, 3500, 1500, 3000, 2000];

describe(`SIGKILL during a drain of ${MESSAGES} messages (${testProvider})`, () => {
  let database: TestDatabase;
  let db: Db;
  let emulator: ServiceEmulator;
  let shop: FakeShop;
  let app: AppProcess | undefined;
  afterAll(async () => {
    await app?.kill('SIGKILL');
    await db?.$disconnect();
    await Promise.all([emulator?.close(), shop?.close()]);
    await database?.drop();
  });

  it('delivers every message although the process is killed again and again, with duplicates only from in-flight sends', async () => {
    database = await createTestDatabase();
    await applyMigrations(database.url);
    db = await createDb(database.url, { poolSize: 3 });
    emulator = await startServiceEmulator({ host: '127.0.0.1' });
    shop = await startFakeShop({
      apiKey: API_KEY,
      apiSecret: API_SECRET,
      host: '127.0.0.1',
      shops: [{ domain: SHOP, id: '9100001', name: 'Kill Store' }],
    });
    const env = {
      DATABASE_URL: database.url,
      SHOPIFY_API_KEY: API_KEY,
      SHOPIFY_API_SECRET: API_SECRET,
      SERVICE_BASE_URL: emulator.url,
      SHOPIFY_ADMIN_ORIGIN: shop.url,
      SERVICE_TIMEOUT_MS: '2000',
    };

    // connect the shop through the app, with its worker off
    app = await spawnApp({ ...env, ROLE: 'web' });
    const ws = emulator.createWorkspace({ name: 'Kill workspace', rateLimit: LIMIT });
    const connect = await fetch(`${app.url}/api/connection`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${shop.mintSessionToken(SHOP)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: ws.apiKey }),
    });
    expect(connect.status).toBe(200);
    const ids = Array.from({ length: MESSAGES }, (_, n) => `wh-kill-${n}-${randomUUID().slice(0, 8)}`);
    // the queue is filled directly (as the intake would map and store it): the drain is the subject
    const row = await db.shop.findUniqueOrThrow({ where: { domain: SHOP } });
    await queueOrders(db, row, ids);
    expect(await db.outboxMessage.count({ where: { status: 'queued' } })).toBe(MESSAGES);
    await app.kill('SIGKILL');
    app = undefined;

    const delivered = () => db.outboxMessage.count({ where: { status: 'delivered' } });
    const inFlight = new Set<string>(); // "<message id>/<locking worker>": one in-flight send each
    const kills: string[] = [];
    const started = Date.now();
    for (let i = 0; (await delivered()) < MESSAGES && Date.now() - started < 150_000; i++) {
      app = await spawnApp(env);
      const lifetime = LIFETIMES_MS[i % LIFETIMES_MS.length]!;
      await sleep(lifetime);
      const before = await delivered();
      if (before >= MESSAGES) break;
      await app.kill('SIGKILL');
      app = undefined;
      const locked = await db.outboxMessage.findMany({ where: { status: 'delivering' }, select: { id: true, lockedBy: true } });
      const fresh = locked.filter((m) => !inFlight.has(`${m.id}/${m.lockedBy}`));
      for (const m of locked) inFlight.add(`${m.id}/${m.lockedBy}`);
      const past = new Date(Date.now() - 1);
      await db.shopDue.updateMany({ where: { leasedBy: { not: null } }, data: { leasedUntil: past } });
      await db.outboxMessage.updateMany({ where: { status: 'delivering' }, data: { lockedUntil: past } });
      kills.push(`kill ${i + 1} after ${lifetime} ms: delivered ${before}, in flight ${locked.length} (${fresh.length} new)`);
    }
    // the last process (if the drain finished while it lived) finishes in peace
    if (!app) app = await spawnApp(env);
    const end = Date.now() + 60_000;
    while ((await delivered()) < MESSAGES && Date.now() < end) await sleep(200);
    await sleep(500);
    const drainS = (Date.now() - started) / 1000;
    await app.kill('SIGTERM');
    app = undefined;

    const final = account(ids, arrivals(emulator.events({ workspaceId: ws.id })));
    const states = Object.fromEntries(
      (await db.outboxMessage.groupBy({ by: ['status'], _count: { _all: true } })).map((r) => [r.status, r._count._all]),
    );
    const attempts = await db.deliveryAttempt.count();
    console.log(kills.join('\n'));
    report(`SIGKILL during a drain of ${MESSAGES}`, {
      SIGKILLs: kills.length,
      'drain time incl. restarts (s)': drainS.toFixed(1),
      'events expected / arrived': `${final.expected} / ${final.arrived}`,
      missing: final.missing.length,
      duplicates: final.duplicates,
      'bound: sends in flight at the kills': inFlight.size,
      'attempts recorded': attempts,
      'message states': formatCounts(states),
    });
    expect(kills.length).toBeGreaterThanOrEqual(3);
    expect(final.missing).toEqual([]);
    expect(final.unexpected).toBe(0);
    expect(final.duplicates).toBeLessThanOrEqual(inFlight.size);
    expect(states.delivered).toBe(MESSAGES);
  }, 300_000);
});
