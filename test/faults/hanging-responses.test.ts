// Responses that hang past the request timeout (SERVICE_TIMEOUT_MS=1000): a few single hangs,
// then a 5 s brown-out where every send hangs. Timeouts are retried; nothing is lost. And a
// service that answers slowly but in time: a lane keeps no more than its cap waiting on it.
import { sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { DEFAULT_SHOP, startStack, type Stack } from '../helpers/stack';
import {
  account,
  arrivals,
  driveUntilDelivered,
  formatCounts,
  queueOrders,
  report,
  sendAll,
  sleep,
  statusCounts,
  testClock,
  type Delivery,
} from './support';

describe(`responses that hang past the timeout (${testProvider})`, () => {
  let s: Stack;
  afterAll(() => s?.close());

  it('times out hung requests, retries them, and delivers every event once', async () => {
    const clock = testClock();
    s = await startStack({ server: { now: clock.now }, env: { SERVICE_TIMEOUT_MS: '1000' } });
    const ws = await s.connectShop(undefined, { rateLimit: 20 });
    const ids: string[] = [];
    const delivery = (n: number): Delivery => {
      const id = `wh-hang-${n}`;
      ids.push(id);
      return { webhookId: id, send: () => s.webhook('orders/create', sampleOrder(n), { webhookId: id }) };
    };

    // six sends hang for 5 s (the client gives up after 1 s)
    s.emulator.injectFault({ mode: 'delay', delayMs: 5_000, count: 6, path: '/webhook/send' });
    await sendAll(
      Array.from({ length: 60 }, (_, n) => delivery(n)),
      { concurrency: 8 },
    );
    await sleep(3_000);
    // a brown-out: every send hangs for 3 s, for 5 s
    const brownout = Date.now();
    s.emulator.injectFault({ mode: 'delay', delayMs: 3_000, forMs: 5_000, path: '/webhook/send' });
    await sendAll(
      Array.from({ length: 40 }, (_, n) => delivery(100 + n)),
      { concurrency: 8 },
    );
    await sleep(Math.max(0, brownout + 5_000 - Date.now()));

    const acc = await driveUntilDelivered(s, clock, ids, 60_000, (e) => e.workspaceId === ws.workspaceId);
    await sleep(300);
    const final = account(ids, arrivals(s.emulator.events({ workspaceId: ws.workspaceId })));
    const hung = s.emulator.requests().filter((r) => r.fault === 'delay');
    const timeouts = await s.app.db.deliveryAttempt.count({
      where: { outcome: 'retryable', error: { contains: 'did not answer within' } },
    });
    const longest = await s.app.db.deliveryAttempt.aggregate({ _max: { durationMs: true } });
    const states = await statusCounts(s, ws.shopId);

    report('responses that hang past the timeout', {
      webhooks: ids.length,
      'hung requests at the emulator (6 single + brown-out)': hung.length,
      'attempts recorded as timed out': timeouts,
      'longest recorded attempt (ms, timeout 1000)': longest._max.durationMs ?? 0,
      'backoff skipped with the clock (s)': Math.round(acc.skippedMs / 1000),
      'events expected / arrived': `${final.expected} / ${final.arrived}`,
      missing: final.missing.length,
      'duplicates (bound: timed-out requests the service still processed; 0 here)': final.duplicates,
      'message states': formatCounts(states),
    });
    expect(hung.length).toBeGreaterThanOrEqual(6);
    expect(timeouts).toBeGreaterThanOrEqual(6);
    expect(longest._max.durationMs ?? 0).toBeLessThan(2_500);
    expect(final.missing).toEqual([]);
    expect(final.duplicates).toBe(0);
    expect(states.dead ?? 0).toBe(0);
  }, 120_000);
});

describe(`a slow service gets no pile of requests (${testProvider})`, () => {
  let s: Stack;
  afterAll(() => s?.close());

  it('keeps at most WORKER_MAX_IN_FLIGHT requests waiting on a slow service, however high the limit', async () => {
    s = await startStack({ env: { WORKER_MAX_IN_FLIGHT: '4', SERVICE_TIMEOUT_MS: '5000' } });
    // a raised limit lets the pacer release 1,000 sends a second: only the cap holds them back
    const ws = await s.connectShop(undefined, { rateLimit: 1_000 });
    const shop = await s.app.db.shop.findUniqueOrThrow({ where: { domain: DEFAULT_SHOP } });
    // every send takes 600 ms to answer, well within the timeout
    s.emulator.injectFault({ mode: 'delay', delayMs: 600, forMs: 60_000, path: '/webhook/send' });
    const ids = Array.from({ length: 24 }, (_, i) => `slow-${i}`);
    await queueOrders(s.app.db, shop, ids);
    s.app.notifyQueued(shop.id);
    await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId }).length >= ids.length, 20_000, 'every slow send');

    // the most requests the emulator held at one time (each from its arrival to its answer)
    const sends = s.emulator.requests().filter((r) => r.workspaceId === ws.workspaceId && r.path.includes('/webhook/send'));
    const most = Math.max(...sends.map((r) => sends.filter((o) => o.at <= r.at && r.at < o.at + o.durationMs).length));
    const final = account(ids, arrivals(s.emulator.events({ workspaceId: ws.workspaceId })));
    report('a slow service (600 ms a send, limit 1,000/s, WORKER_MAX_IN_FLIGHT=4)', {
      sends: sends.length,
      'most requests in flight at once': most,
      'events expected / arrived / duplicates': `${final.expected} / ${final.arrived} / ${final.duplicates}`,
    });
    expect(most).toBeLessThanOrEqual(4);
    expect(sends.length).toBe(ids.length);
    expect(final.missing).toEqual([]);
    expect(final.duplicates).toBe(0);
  }, 60_000);
});
