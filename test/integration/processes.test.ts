// Real OS processes on one database: a worker killed with SIGKILL mid-drain, and two workers
// sharing one backlog and one workspace's limit. The limit across processes is read from the
// delivery attempts both write (test/helpers/turns.ts), not from arrival times at the emulator,
// which shares this test's event loop.
import { sampleOrder } from '../../sandbox/samples';
import { maxInWindow } from '../helpers/clock';
import { attemptStarts } from '../helpers/turns';
import { testProvider } from '../helpers/db';
import { spawnApp, type AppProcess } from '../helpers/process';
import { startStack, type Stack } from '../helpers/stack';

async function ingest(s: Stack, domain: string, n: number, prefix: string): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < n) {
        const i = next++;
        const res = await s.shop.sendWebhook(s.app.url, {
          topic: 'orders/create',
          shopDomain: domain,
          payload: sampleOrder(i),
          webhookId: `${prefix}-${i}`,
        });
        if (res.status !== 200) throw new Error(`webhook got ${res.status}`);
      }
    }),
  );
}

describe(`several processes on one database (${testProvider})`, () => {
  let s: Stack;
  const children: AppProcess[] = [];
  beforeAll(async () => {
    // the in-process app only takes webhooks; the workers under test are child processes
    s = await startStack({ env: { ROLE: 'web' } });
  });
  afterAll(async () => {
    await Promise.all(children.map((c) => c.kill('SIGKILL')));
    await s.close();
  });

  it('a worker killed with SIGKILL mid-drain loses nothing; duplicates are at most the in-flight count', async () => {
    const ws = await s.connectShop('crash.myshopify.com', { rateLimit: 100 });
    await ingest(s, 'crash.myshopify.com', 600, 'crash');
    const first = await spawnApp(s.childEnv({ ROLE: 'all' }));
    children.push(first);
    await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId }).length >= 150, 30_000, '150 delivered');
    await first.kill('SIGKILL');
    const inFlight = await s.app.db.outboxMessage.count({ where: { status: 'delivering' } });
    // what the dead process held (its lane's lease, its claims' locks) runs out at once, as it
    // would after its time (10 s for a lease): the next process takes over through that expiry
    const past = new Date(Date.now() - 1);
    await s.app.db.shopDue.updateMany({ where: { leasedBy: { not: null } }, data: { leasedUntil: past } });
    await s.app.db.outboxMessage.updateMany({ where: { status: 'delivering' }, data: { lockedUntil: past } });
    const atKill = s.emulator.events({ workspaceId: ws.workspaceId }).length;
    const second = await spawnApp(s.childEnv({ ROLE: 'all' }));
    children.push(second);
    const events = await s.until(
      () => {
        const e = s.emulator.events({ workspaceId: ws.workspaceId });
        return new Set(e.map((x) => x.event_attribute.source_id)).size >= 600 ? e : null;
      },
      60_000,
      'all 600 delivered after restart',
    );
    await new Promise((r) => setTimeout(r, 500));
    const all = s.emulator.events({ workspaceId: ws.workspaceId });
    const duplicates = all.length - new Set(all.map((x) => x.event_attribute.source_id)).size;
    console.log(
      `crash (${testProvider}): delivered before kill=${atKill}, in flight at kill=${inFlight}, duplicates=${duplicates}, total=${all.length}`,
    );
    expect(events!.length).toBeGreaterThanOrEqual(600);
    expect(duplicates).toBeLessThanOrEqual(inFlight);
    expect(await s.app.db.outboxMessage.count({ where: { sourceId: { startsWith: 'crash-' }, status: { not: 'delivered' } } })).toBe(0);
    await second.kill('SIGTERM');
  }, 120_000);

  // Two stores of one merchant on one API key: one workspace, one limit. Each worker process
  // serves one of the shops (a shop is in one lane at a time), both send into the workspace.
  it('two workers share one workspace: nothing delivered twice, and its limit holds across both', async () => {
    const ws = await s.connectShop('shared.myshopify.com', { rateLimit: 100 });
    s.shop.addShop({ domain: 'shared-two.myshopify.com', id: '700991', name: 'Shared Two' });
    expect((await s.api('PUT', '/api/connection', { api_key: ws.apiKey }, 'shared-two.myshopify.com')).status).toBe(200);
    await Promise.all([ingest(s, 'shared.myshopify.com', 200, 'shared'), ingest(s, 'shared-two.myshopify.com', 200, 'shared-two')]);
    // one lane each, so each process serves one shop (a process with free lanes takes every due shop);
    // a guard of 100 ms: room for the steps between a turn and its attempt's start (attemptStarts)
    const env = s.childEnv({ ROLE: 'all', WORKER_LANES: '1', SERVICE_RATE_GUARD_MS: '100' });
    const [a, b] = await Promise.all([spawnApp(env), spawnApp(env)]);
    children.push(a!, b!);
    await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId }).length >= 400, 60_000, '400 delivered');
    // both stopped before counting: a graceful stop records the attempts in flight, so the
    // service's sends and the attempts recorded are final
    expect(await Promise.all([a!.kill('SIGTERM'), b!.kill('SIGTERM')])).toEqual([0, 0]);
    const events = s.emulator.events({ workspaceId: ws.workspaceId });
    const sends = s.emulator.requests().filter((r) => r.workspaceId === ws.workspaceId && r.path.includes('/webhook/send'));
    const workers = await s.app.db.deliveryAttempt.groupBy({
      by: ['workerId'],
      where: { message: { sourceId: { startsWith: 'shared-' } } },
      _count: { _all: true },
    });
    const both = await s.app.db.shop.findMany({ where: { domain: { in: ['shared.myshopify.com', 'shared-two.myshopify.com'] } } });
    const starts = await attemptStarts(
      s.app.db,
      both.map((x) => x.id),
    );
    const report = {
      events: events.length,
      distinct: new Set(events.map((e) => e.event_attribute.source_id)).size,
      attemptsInAnySecond: maxInWindow(starts),
      count429: sends.filter((r) => r.status === 429).length,
      perWorker: workers.map((w) => w._count._all),
    };
    console.log(
      `two workers (${testProvider}): ${JSON.stringify({ ...report, arrivalsInAnySecond: maxInWindow(sends.map((r) => r.at)) })}`,
    );
    // exactly once; the emulator's 429s are printed, not asserted: its limiter stamps arrivals on
    // this test's event loop, and a 429 costs a retry, never an event
    expect(report).toMatchObject({ events: 400, distinct: 400 });
    expect(starts.length).toBe(sends.length);
    expect(report.attemptsInAnySecond).toBeLessThanOrEqual(100);
    expect(workers).toHaveLength(2);
    expect(Math.min(...report.perWorker)).toBeGreaterThan(40);
  }, 120_000);
});
