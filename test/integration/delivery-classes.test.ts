// The workspace's budget goes to what matters first: an order confirmation is sent within a
// second or so whatever storefront or import backlog waits, each backlogged lower class keeps
// its floor share, stale behaviour events expire unsent, and all of it holds across shops that
// share a workspace and across worker processes.
import { sampleOrder } from '../../sandbox/samples';
import { lowerDue } from '../../src/outbox/due';
import type { Db } from '../../src/db/client';
import { maxInWindow } from '../helpers/clock';
import { testProvider } from '../helpers/db';
import { spawnApp, type AppProcess } from '../helpers/process';
import { startStack, type Stack } from '../helpers/stack';

const BEHAVIOUR = 2;
const HISTORY = 3;

/** Queues `n` messages of one event and class for a shop, due at `dueAt` (straight into the outbox). */
async function queue(
  db: Db,
  shopId: string,
  n: number,
  eventName: string,
  deliveryClass: number,
  prefix: string,
  dueAt = new Date(),
): Promise<void> {
  const rows = Array.from({ length: n }, (_, i) => ({
    shopId,
    sourceId: `${prefix}-${i}`,
    topic: 'test',
    eventName,
    deliveryClass,
    email: `${prefix}-${i}@example.com`,
    body: JSON.stringify({ event_name: eventName, email: `${prefix}-${i}@example.com`, event_attribute: { source_id: `${prefix}-${i}` } }),
    runAt: dueAt,
    dueAt,
  }));
  for (let i = 0; i < rows.length; i += 500) await db.outboxMessage.createMany({ data: rows.slice(i, i + 500) });
  await lowerDue(db, testProvider, [{ shopId, runAt: dueAt }]);
}

/** From due to accepted by the service, for the order events of a workspace (ms). */
async function orderLatencies(s: Stack, workspaceId: string): Promise<number[]> {
  const events = s.emulator.events({ workspaceId, eventName: 'order_placed' });
  const rows = await s.app.db.outboxMessage.findMany({
    where: { eventName: 'order_placed', sourceId: { in: events.map((e) => String(e.event_attribute.source_id)) } },
    select: { sourceId: true, dueAt: true },
  });
  const due = new Map(rows.map((r) => [r.sourceId, r.dueAt.getTime()]));
  return events.map((e) => e.receivedAt - due.get(String(e.event_attribute.source_id))!);
}

const shareOf = (events: Array<{ event_name: string }>, name: string) => events.filter((e) => e.event_name === name).length / events.length;

describe(`delivery classes (${testProvider})`, () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(() => s.close());

  it('sends an order within a second and a half while storefront and import backlogs wait, at the real 10/s', async () => {
    const ws = await s.connectShop('sale.myshopify.com');
    await queue(s.app.db, ws.shopId, 200, 'viewed_product', BEHAVIOUR, 'view');
    await queue(s.app.db, ws.shopId, 50, 'order_imported', HISTORY, 'import');
    s.app.notifyQueued(ws.shopId);
    await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId }).length >= 20, 15_000, '20 backlog sends');
    for (let i = 0; i < 3; i++) {
      await s.webhook('orders/create', sampleOrder(7000 + i), { domain: 'sale.myshopify.com', webhookId: `sale-order-${i}` });
      await new Promise((r) => setTimeout(r, 700));
    }
    await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId, eventName: 'order_placed' }).length >= 3, 10_000, 'the 3 orders');
    const latencies = await orderLatencies(s, ws.workspaceId);
    const waiting = await s.app.db.outboxMessage.count({ where: { shopId: ws.shopId, eventName: 'viewed_product', status: 'queued' } });
    console.log(`delivery classes (${testProvider}): order latencies ${latencies.join(', ')} ms with ${waiting} views still waiting`);
    expect(Math.max(...latencies)).toBeLessThanOrEqual(1500);
    // the views were not sent before the orders: most of them still wait
    expect(waiting).toBeGreaterThan(120);
  });

  it('keeps each backlogged lower class at its floor share, and the limit, across two shops of one workspace', async () => {
    const a = await s.connectShop('floor-a.myshopify.com', { rateLimit: 100 });
    s.shop.addShop({ domain: 'floor-b.myshopify.com', id: '700881', name: 'Floor B' });
    expect((await s.api('PUT', '/api/connection', { api_key: a.apiKey }, 'floor-b.myshopify.com')).status).toBe(200);
    const b = await s.app.db.shop.findUniqueOrThrow({ where: { domain: 'floor-b.myshopify.com' } });
    // shop A: behaviour; shop B: history. The workspace's budget is shared
    await queue(s.app.db, a.shopId, 2000, 'viewed_product', BEHAVIOUR, 'fa');
    await queue(s.app.db, b.id, 2000, 'order_imported', HISTORY, 'fb');
    s.app.notifyQueued(a.shopId);
    s.app.notifyQueued(b.id);
    await s.until(() => s.emulator.events({ workspaceId: a.workspaceId }).length >= 600, 30_000, '600 sends');
    const events = s.emulator.events({ workspaceId: a.workspaceId }).slice(0, 600);
    const sends = s.emulator.requests().filter((r) => r.workspaceId === a.workspaceId && r.path.includes('/webhook/send'));
    const report = {
      history: shareOf(events, 'order_imported'),
      behaviour: shareOf(events, 'viewed_product'),
      maxPerSecond: maxInWindow(sends.map((r) => r.at)),
      count429: sends.filter((r) => r.status === 429).length,
    };
    console.log(`floors (${testProvider}): ${JSON.stringify(report)}`);
    expect(Math.abs(report.history - 0.05)).toBeLessThanOrEqual(0.02);
    expect(report.behaviour).toBeGreaterThanOrEqual(0.93);
    expect(report.count429).toBe(0);
    expect(report.maxPerSecond).toBeLessThanOrEqual(100);
    await s.app.db.outboxMessage.deleteMany({ where: { shopId: { in: [a.shopId, b.id] }, status: 'queued' } });
  });

  it('gives another shop of the workspace its order first, ahead of this shop’s storefront backlog', async () => {
    const a = await s.connectShop('busy-a.myshopify.com');
    s.shop.addShop({ domain: 'busy-b.myshopify.com', id: '700882', name: 'Busy B' });
    expect((await s.api('PUT', '/api/connection', { api_key: a.apiKey }, 'busy-b.myshopify.com')).status).toBe(200);
    await queue(s.app.db, a.shopId, 200, 'viewed_product', BEHAVIOUR, 'ba');
    s.app.notifyQueued(a.shopId);
    await s.until(() => s.emulator.events({ workspaceId: a.workspaceId }).length >= 10, 10_000, '10 views sent');
    await s.webhook('orders/create', sampleOrder(8100), { domain: 'busy-b.myshopify.com', webhookId: 'busy-b-order' });
    await s.until(() => s.emulator.events({ workspaceId: a.workspaceId, eventName: 'order_placed' }).length >= 1, 10_000, "shop B's order");
    const [latency] = await orderLatencies(s, a.workspaceId);
    console.log(`shared workspace (${testProvider}): the other shop's order in ${latency} ms`);
    expect(latency).toBeLessThanOrEqual(1500);
    await s.app.db.outboxMessage.deleteMany({ where: { shopId: a.shopId, status: 'queued' } });
  });

  it('expires a behaviour event a day past due: never sent, shown with why, counted', async () => {
    const ws = await s.connectShop('stale.myshopify.com');
    await queue(s.app.db, ws.shopId, 5, 'viewed_product', BEHAVIOUR, 'stale', new Date(Date.now() - 25 * 3_600_000));
    await queue(s.app.db, ws.shopId, 2, 'viewed_product', BEHAVIOUR, 'fresh');
    s.app.notifyQueued(ws.shopId);
    await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId }).length >= 2, 10_000, 'the fresh views');
    await s.until(
      async () => (await s.app.db.outboxMessage.count({ where: { shopId: ws.shopId, status: 'expired' } })) === 5,
      10_000,
      '5 expired',
    );
    const sent = s.emulator.events({ workspaceId: ws.workspaceId }).map((e) => String(e.event_attribute.source_id));
    expect(sent.sort()).toEqual(['fresh-0', 'fresh-1']);
    const log = await s.api('GET', '/api/deliveries?status=expired', undefined, 'stale.myshopify.com');
    expect(log.body.deliveries).toHaveLength(5);
    expect(log.body.deliveries[0]).toMatchObject({
      status: 'expired',
      last_error: expect.stringContaining('no longer useful 24 h after it was due'),
    });
    const metrics = await (await fetch(`${s.app.url}/metrics`)).text();
    expect(metrics).toMatch(/connector_class_expired_total\{class="behaviour"\} 5/);
    // and the budget view's counts: written by the worker within a few seconds
    await s.app.worker.stop();
    s.app.worker.start();
    const usage = await s.app.db.deliveryUsage.findMany({ where: { shopId: ws.shopId } });
    expect(usage.reduce((n, u) => n + u.expired, 0)).toBe(5);
    expect(usage.reduce((n, u) => n + u.sends, 0)).toBe(2);
  });
});

describe(`delivery classes across worker processes (${testProvider})`, () => {
  let s: Stack;
  const children: AppProcess[] = [];
  beforeAll(async () => {
    s = await startStack({ env: { ROLE: 'web' } });
  });
  afterAll(async () => {
    await Promise.all(children.map((c) => c.kill('SIGKILL')));
    await s.close();
  });

  it('two workers share one workspace’s classes and floors: orders first, history at its floor, the limit held', async () => {
    const a = await s.connectShop('procs-a.myshopify.com', { rateLimit: 20 });
    s.shop.addShop({ domain: 'procs-b.myshopify.com', id: '700883', name: 'Procs B' });
    expect((await s.api('PUT', '/api/connection', { api_key: a.apiKey }, 'procs-b.myshopify.com')).status).toBe(200);
    const b = await s.app.db.shop.findUniqueOrThrow({ where: { domain: 'procs-b.myshopify.com' } });
    await queue(s.app.db, a.shopId, 1000, 'viewed_product', BEHAVIOUR, 'pa');
    await queue(s.app.db, b.id, 1000, 'order_imported', HISTORY, 'pb');
    // the emulator counts by its own clock in this busy test process: room for its jitter (processes.test.ts)
    const env = s.childEnv({ ROLE: 'worker', WORKER_LANES: '1', SERVICE_RATE_GUARD_MS: '100' });
    const workers = await Promise.all([spawnApp(env), spawnApp(env)]);
    children.push(...workers);
    // an order of shop B a second for 10 s, behind both backlogs
    for (let i = 0; i < 10; i++) {
      await s.shop.sendWebhook(s.app.url, {
        topic: 'orders/create',
        shopDomain: 'procs-b.myshopify.com',
        payload: sampleOrder(9000 + i),
        webhookId: `procs-order-${i}`,
      });
      await new Promise((r) => setTimeout(r, 1000));
    }
    await s.until(() => s.emulator.events({ workspaceId: a.workspaceId, eventName: 'order_placed' }).length >= 10, 15_000, 'the 10 orders');
    const latencies = await orderLatencies(s, a.workspaceId);
    const events = s.emulator.events({ workspaceId: a.workspaceId });
    const sends = s.emulator.requests().filter((r) => r.workspaceId === a.workspaceId && r.path.includes('/webhook/send'));
    const attempts = await s.app.db.deliveryAttempt.groupBy({ by: ['workerId'], _count: { _all: true } });
    const report = {
      orderMaxMs: Math.max(...latencies),
      history: Number(shareOf(events, 'order_imported').toFixed(3)),
      sends: events.length,
      maxPerSecond: maxInWindow(sends.map((r) => r.at)),
      count429: sends.filter((r) => r.status === 429).length,
      perWorker: attempts.map((w) => w._count._all),
    };
    console.log(`classes across processes (${testProvider}): ${JSON.stringify(report)}`);
    expect(report.orderMaxMs).toBeLessThanOrEqual(2000);
    expect(Math.abs(report.history - 0.05)).toBeLessThanOrEqual(0.03);
    expect(report.count429).toBe(0);
    expect(report.maxPerSecond).toBeLessThanOrEqual(20);
    expect(attempts.length).toBe(2);
    await Promise.all(workers.map((w) => w.kill('SIGTERM')));
  }, 90_000);
});
