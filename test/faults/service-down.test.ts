// The email service is down (connections dropped, then 500s) while webhooks keep coming, for as
// long as every message takes to fail in three rounds: its first try and two retries after
// growing backoff waits (5 s, then 30 s: about a minute of the app's clock). Afterwards every
// event must arrive, none twice, none dead. The outage is the test's to end, not a timer's, and
// the backoff waits, in it and after it, are skipped with the app's clock, not slept through.
import { sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';
import {
  account,
  arrivals,
  driveUntil,
  driveUntilDelivered,
  formatCounts,
  report,
  sendAll,
  sleep,
  statusCounts,
  testClock,
  type Delivery,
} from './support';

const SENDS = '/webhook/send';
/** Tries each message fails during the outage: the first and two retries. */
const ROUNDS = 3;

describe(`the email service down through three rounds of retries (${testProvider})`, () => {
  let s: Stack;
  afterAll(() => s?.close());

  it('delivers everything queued before and during the outage once the service is back', async () => {
    const clock = testClock();
    s = await startStack({ server: { now: clock.now } });
    const ws = await s.connectShop(undefined, { rateLimit: 200 });
    const ids: string[] = [];
    const delivery = (n: number): Delivery => {
      const id = `wh-down-${n}`;
      ids.push(id);
      return { webhookId: id, send: () => s.webhook('orders/create', sampleOrder(n), { webhookId: id }) };
    };

    // every message tried at least n times, none in flight (attempts count a send when it is claimed)
    const tried = (n: number) => async () =>
      (await s.app.db.outboxMessage.count({ where: { shopId: ws.shopId, OR: [{ attempts: { lt: n } }, { status: 'delivering' }] } })) === 0;
    // until the test clears them: connections dropped, then 500s
    s.emulator.injectFault({ mode: 'drop', count: Number.POSITIVE_INFINITY, path: SENDS });
    // a burst at the start of the outage, then 500s once the first 30 tries have been dropped
    const burst = await sendAll(
      Array.from({ length: 100 }, (_, n) => delivery(n)),
      { concurrency: 8 },
    );
    const dropped = () =>
      s.emulator.requests().filter((r) => r.workspaceId === ws.workspaceId && r.path.includes(SENDS) && r.fault === 'drop').length;
    await s.until(() => dropped() >= 30, 30_000, '30 sends dropped');
    s.emulator.clearFaults();
    s.emulator.injectFault({ mode: 'status500', count: Number.POSITIVE_INFINITY, path: SENDS });
    // more webhooks while the service answers 500
    const trickle = Array.from({ length: 100 }, (_, n) => delivery(100 + n));
    const during500 = await sendAll(trickle, { concurrency: 8 });
    const outageSkippedMs = await driveUntil(s, clock, tried(ROUNDS), `every message tried ${ROUNDS} times`);
    const during = await statusCounts(s, ws.shopId);
    // the service is back: what arrives from here on is answered
    s.emulator.clearFaults();
    const failed = s.emulator.requests().filter((r) => r.workspaceId === ws.workspaceId && r.path.includes(SENDS) && r.status !== 200);
    const recovery = Date.now();

    const acc = await driveUntilDelivered(s, clock, ids, 60_000, (e) => e.workspaceId === ws.workspaceId);
    const drainMs = Date.now() - recovery;
    // the service has the last events before the app records its answers: wait for the records
    await s.until(async () => (await statusCounts(s, ws.shopId)).delivered === ids.length, 30_000, 'every delivery recorded');
    await sleep(500);
    const final = account(ids, arrivals(s.emulator.events({ workspaceId: ws.workspaceId })));
    const attempts = await s.app.db.deliveryAttempt.count();
    const fewestAttempts = await s.app.db.outboxMessage.aggregate({ _min: { attempts: true }, where: { shopId: ws.shopId } });
    const states = await statusCounts(s, ws.shopId);

    report('service down through three rounds of retries', {
      'webhooks accepted (at the start + during the 500s)': `${burst.accepted.length} + ${during500.accepted.length}`,
      'message states at the end of the outage': formatCounts(during),
      'failed requests during outage (dropped / 500)': `${dropped()} / ${failed.filter((r) => r.status === 500).length}`,
      'delivery attempts recorded': attempts,
      'fewest attempts for one message': fewestAttempts._min.attempts ?? 0,
      'backoff skipped with the clock, during / after the outage (s)': `${Math.round(outageSkippedMs / 1000)} / ${Math.round(acc.skippedMs / 1000)}`,
      'real time from recovery to fully drained (s)': (drainMs / 1000).toFixed(1),
      'events expected / arrived': `${final.expected} / ${final.arrived}`,
      missing: final.missing.length,
      'duplicates (bound 0: the emulator processes nothing it drops or answers 500)': final.duplicates,
      'message states': formatCounts(states),
    });
    if (final.missing.length) {
      const stuck = await s.app.db.outboxMessage.findMany({ where: { sourceId: { in: final.missing } } });
      console.log(
        'not delivered',
        clock.now().toISOString(),
        stuck.map((m) => ({
          id: m.sourceId,
          status: m.status,
          runAt: m.runAt.toISOString(),
          attempts: m.attempts,
          lockedUntil: m.lockedUntil,
          err: m.lastError,
        })),
      );
      console.log('pacer', await s.app.db.workspacePacer.findMany());
    }
    expect(burst.gaveUp).toEqual([]);
    expect(during500.gaveUp).toEqual([]);
    // every message failed in each round, and was delivered after
    expect(dropped()).toBeGreaterThanOrEqual(30);
    expect(failed.length).toBeGreaterThanOrEqual(ROUNDS * ids.length);
    expect(fewestAttempts._min.attempts).toBeGreaterThanOrEqual(ROUNDS + 1);
    expect(final.missing).toEqual([]);
    expect(final.duplicates).toBe(0);
    expect(states.dead ?? 0).toBe(0);
    expect(states.delivered).toBe(ids.length);
  }, 150_000);
});
