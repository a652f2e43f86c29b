// The workspace's budget goes to what matters first: an order confirmation goes ahead of whatever
// storefront or import backlog waits, each backlogged lower class keeps its floor share, stale
// behaviour events expire unsent, and all of it holds across shops that share a workspace and
// across worker processes.
//
// "Ahead" is counted in sends, not in milliseconds: once the order's message is stored, the lane
// finishes the batch it holds (a quarter second of the limit), may claim one more planned before
// the order was there, and sends at most one floor's send before the order in the next: at most
// two batches and two more (one in flight) go before it. Behind the backlog it would wait for all
// of it. The time it takes is `npm run bench -- priority`'s figure.
//
// The limit is read from the pacer's turns (and, across processes, the attempts' start times);
// the emulator's 429s are only printed: its limiter stamps arrivals on this test's event loop,
// which a busy machine delays and bunches, and a 429 costs a retry, never an event.
import { sampleOrder } from '../../sandbox/samples';
import { lowerDue } from '../../src/outbox/due';
import type { Db } from '../../src/db/client';
import { maxInWindow } from '../helpers/clock';
import { attemptStarts, recordTurns } from '../helpers/turns';
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

/** The sends a lane may make before an order stored meanwhile (above), at `limit` a second. */
const aheadBound = (limit: number) => 2 * Math.ceil(limit / 4) + 2;

/**
 * How many of the events `counted` were received after `from` (a count of them taken once the
 * order was seen stored) and before the order `sourceId`. Below 0 when the order went before the
 * count was taken: a later look only ever counts fewer.
 */
function sentAhead(counted: Array<{ event_attribute: Record<string, unknown> }>, sourceId: string, from: number): number {
  const at = counted.findIndex((e) => e.event_attribute.source_id === sourceId);
  if (at < 0) throw new Error(`${sourceId} was not received`);
  return at - from;
}

describe(`delivery classes (${testProvider})`, () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(() => s.close());

  it('sends an order ahead of the storefront and import backlogs, at the real 10/s', async () => {
    const ws = await s.connectShop('sale.myshopify.com');
    await queue(s.app.db, ws.shopId, 200, 'viewed_product', BEHAVIOUR, 'view');
    await queue(s.app.db, ws.shopId, 50, 'order_imported', HISTORY, 'import');
    s.app.notifyQueued(ws.shopId);
    await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId }).length >= 20, 15_000, '20 backlog sends');
    const ahead: number[] = [];
    for (let i = 0; i < 3; i++) {
      const id = `sale-order-${i}`;
      // stored by stage 2 when s.webhook returns: what is sent from here on was free to be the order
      await s.webhook('orders/create', sampleOrder(7000 + i), { domain: 'sale.myshopify.com', webhookId: id });
      const from = s.emulator.events({ workspaceId: ws.workspaceId }).length;
      await s.until(
        () => s.emulator.events({ workspaceId: ws.workspaceId, eventName: 'order_placed' }).some((e) => e.event_attribute.source_id === id),
        15_000,
        id,
      );
      ahead.push(sentAhead(s.emulator.events({ workspaceId: ws.workspaceId }), id, from));
    }
    const waiting = await s.app.db.outboxMessage.count({ where: { shopId: ws.shopId, eventName: 'viewed_product', status: 'queued' } });
    const latencies = await orderLatencies(s, ws.workspaceId);
    console.log(
      `delivery classes (${testProvider}): sends ahead of each order ${ahead.join(', ')} (bound ${aheadBound(10)}); latencies ${latencies.join(', ')} ms; ${waiting} views still waiting`,
    );
    expect(ahead.filter((n) => n > aheadBound(10))).toEqual([]);
    // the views were not sent before the orders: most of them still wait
    expect(waiting).toBeGreaterThan(120);
  });

  it('keeps each backlogged lower class at its floor share, and the limit, across two shops of one workspace', async () => {
    const turns = recordTurns();
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
    turns.restore();
    const report = {
      history: shareOf(events, 'order_imported'),
      behaviour: shareOf(events, 'viewed_product'),
      // the pacer's own turns for the workspace, both shops' lanes together
      turnsInAnySecond: maxInWindow(turns.departures(a.workspaceId)),
      count429: sends.filter((r) => r.status === 429).length,
    };
    console.log(`floors (${testProvider}): ${JSON.stringify({ ...report, arrivalsInAnySecond: maxInWindow(sends.map((r) => r.at)) })}`);
    expect(Math.abs(report.history - 0.05)).toBeLessThanOrEqual(0.02);
    expect(report.behaviour).toBeGreaterThanOrEqual(0.93);
    expect(report.turnsInAnySecond).toBeLessThanOrEqual(100);
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
    const from = s.emulator.events({ workspaceId: a.workspaceId }).length;
    await s.until(() => s.emulator.events({ workspaceId: a.workspaceId, eventName: 'order_placed' }).length >= 1, 10_000, "shop B's order");
    const ahead = sentAhead(s.emulator.events({ workspaceId: a.workspaceId }), 'busy-b-order', from);
    const [latency] = await orderLatencies(s, a.workspaceId);
    console.log(
      `shared workspace (${testProvider}): ${ahead} of shop A's views ahead of shop B's order (bound ${aheadBound(10)}), in ${latency} ms`,
    );
    // shop A's lane leaves the workspace's turns to the other shop's order once it sees it due
    expect(ahead).toBeLessThanOrEqual(aheadBound(10));
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
    // a guard of 100 ms: room for the steps between a turn and its attempt's start (attemptStarts)
    const env = s.childEnv({ ROLE: 'worker', WORKER_LANES: '1', SERVICE_RATE_GUARD_MS: '100' });
    const workers = await Promise.all([spawnApp(env), spawnApp(env)]);
    children.push(...workers);
    await s.until(() => s.emulator.events({ workspaceId: a.workspaceId }).length >= 20, 15_000, '20 backlog sends');
    // orders of shop B, one after the other, behind both backlogs: each stored by a worker's stage
    // 2, then counted in the workspace's sends (both shops, both processes) until it is sent
    const ahead: number[] = [];
    for (let i = 0; i < 10; i++) {
      const id = `procs-order-${i}`;
      await s.shop.sendWebhook(s.app.url, {
        topic: 'orders/create',
        shopDomain: 'procs-b.myshopify.com',
        payload: sampleOrder(9000 + i),
        webhookId: id,
      });
      await s.until(() => s.app.db.outboxMessage.findFirst({ where: { sourceId: id, eventName: 'order_placed' } }), 15_000, `${id} stored`);
      const from = s.emulator.events({ workspaceId: a.workspaceId }).length;
      await s.until(
        () => s.emulator.events({ workspaceId: a.workspaceId, eventName: 'order_placed' }).some((e) => e.event_attribute.source_id === id),
        15_000,
        `${id} sent`,
      );
      ahead.push(sentAhead(s.emulator.events({ workspaceId: a.workspaceId }), id, from));
    }
    // both workers stopped before counting: a graceful stop records the attempts in flight, so
    // the service's sends and the attempts recorded are final, not read while a send is answered
    expect(await Promise.all(workers.map((w) => w.kill('SIGTERM')))).toEqual([0, 0]);
    const latencies = await orderLatencies(s, a.workspaceId);
    const events = s.emulator.events({ workspaceId: a.workspaceId });
    const sends = s.emulator.requests().filter((r) => r.workspaceId === a.workspaceId && r.path.includes('/webhook/send'));
    const attempts = await s.app.db.deliveryAttempt.groupBy({ by: ['workerId'], _count: { _all: true } });
    const starts = await attemptStarts(s.app.db, [a.shopId, b.id]);
    const report = {
      history: Number(shareOf(events, 'order_imported').toFixed(3)),
      sends: events.length,
      attemptsInAnySecond: maxInWindow(starts),
      count429: sends.filter((r) => r.status === 429).length,
      perWorker: attempts.map((w) => w._count._all),
    };
    console.log(
      `classes across processes (${testProvider}): ${JSON.stringify(report)}; sends ahead of each order ${ahead.join(', ')} (bound ${2 * aheadBound(20)}); latencies ${latencies.join(', ')} ms`,
    );
    // both lanes, one per process, each at most its bound ahead of the order
    expect(ahead.filter((n) => n > 2 * aheadBound(20))).toEqual([]);
    expect(Math.abs(report.history - 0.05)).toBeLessThanOrEqual(0.03);
    expect(starts.length).toBe(sends.length);
    expect(report.attemptsInAnySecond).toBeLessThanOrEqual(20);
    expect(attempts.length).toBe(2);
  }, 90_000);
});
