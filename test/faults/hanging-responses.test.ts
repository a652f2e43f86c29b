// Responses that hang past the request timeout (SERVICE_TIMEOUT_MS=1000): a few single hangs,
// then a brown-out where the next twenty sends all hang. Timeouts are retried; nothing is lost.
// A hung send is held for 30 s, thirty times the timeout: an attempt that waited for its answer
// would last that long, one cut at the timeout about a second, so the bound between them cannot
// be missed by a slow machine, only by a client that does not time out. And a service that
// answers slowly but in time: a lane keeps no more than its cap waiting on it.
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

const TIMEOUT_MS = 1_000;
/** How long the emulator holds a hung send before it answers. */
const HANG_MS = 30 * TIMEOUT_MS;
const SINGLE_HANGS = 6;
const BROWNOUT_HANGS = 20;

describe(`responses that hang past the timeout (${testProvider})`, () => {
  let s: Stack;
  afterAll(() => s?.close());

  it('times out hung requests, retries them, and delivers every event once', async () => {
    const clock = testClock();
    s = await startStack({ server: { now: clock.now }, env: { SERVICE_TIMEOUT_MS: String(TIMEOUT_MS) } });
    const ws = await s.connectShop(undefined, { rateLimit: 20 });
    const ids: string[] = [];
    const delivery = (n: number): Delivery => {
      const id = `wh-hang-${n}`;
      ids.push(id);
      return { webhookId: id, send: () => s.webhook('orders/create', sampleOrder(n), { webhookId: id }) };
    };

    // six single sends hang (the client gives up after 1 s)
    s.emulator.injectFault({ mode: 'delay', delayMs: HANG_MS, count: SINGLE_HANGS, path: '/webhook/send' });
    await sendAll(
      Array.from({ length: 60 }, (_, n) => delivery(n)),
      { concurrency: 8 },
    );
    // a brown-out: the next twenty sends all hang
    s.emulator.injectFault({ mode: 'delay', delayMs: HANG_MS, count: BROWNOUT_HANGS, path: '/webhook/send' });
    await sendAll(
      Array.from({ length: 40 }, (_, n) => delivery(100 + n)),
      { concurrency: 8 },
    );

    const acc = await driveUntilDelivered(s, clock, ids, 60_000, (e) => e.workspaceId === ws.workspaceId);
    await sleep(300);
    const final = account(ids, arrivals(s.emulator.events({ workspaceId: ws.workspaceId })));
    // each hung send used up one of the injected hangs (the emulator records it only once it answers)
    const hangsLeft = s.emulator.faults().reduce((n, f) => n + f.remaining, 0);
    const hung = SINGLE_HANGS + BROWNOUT_HANGS - hangsLeft;
    const timeouts = await s.app.db.deliveryAttempt.count({
      where: { outcome: 'retryable', error: { contains: 'did not answer within' } },
    });
    const longest = await s.app.db.deliveryAttempt.aggregate({ _max: { durationMs: true } });
    const states = await statusCounts(s, ws.shopId);

    report('responses that hang past the timeout', {
      webhooks: ids.length,
      'hung requests at the emulator (6 single + 20 in the brown-out)': hung,
      'attempts recorded as timed out': timeouts,
      [`longest recorded attempt (ms, timeout ${TIMEOUT_MS}, hang ${HANG_MS})`]: longest._max.durationMs ?? 0,
      'backoff skipped with the clock (s)': Math.round(acc.skippedMs / 1000),
      'events expected / arrived': `${final.expected} / ${final.arrived}`,
      missing: final.missing.length,
      'duplicates (bound: timed-out requests the service still processed; 0 here)': final.duplicates,
      'message states': formatCounts(states),
    });
    expect(hangsLeft).toBe(0);
    expect(timeouts).toBeGreaterThanOrEqual(hung);
    // every attempt was cut at the timeout, none waited for its hung answer
    expect(longest._max.durationMs ?? 0).toBeLessThan(HANG_MS);
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
