// The email service is down for a real 60 s (connections dropped for 30 s, then 500s for 30 s)
// while webhooks keep coming. Afterwards every event must arrive, none twice, none dead.
// Backoff waits after the outage are skipped with the app's clock, not slept through.
import { sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';
import {
  account,
  arrivals,
  driveUntilDelivered,
  formatCounts,
  report,
  sendAll,
  sleep,
  statusCounts,
  testClock,
  type Delivery,
} from './support';

const OUTAGE_MS = Number(process.env.FAULT_OUTAGE_MS ?? 60_000);

describe(`the email service down for 60 s (${testProvider})`, () => {
  let s: Stack;
  afterAll(() => s?.close());

  it('delivers everything queued before and during the outage once the service is back', async () => {
    const clock = testClock();
    s = await startStack({ server: { now: clock.now } });
    const ws = await s.connectShop(undefined, { rateLimit: 50 });
    const ids: string[] = [];
    const delivery = (n: number): Delivery => {
      const id = `wh-down-${n}`;
      ids.push(id);
      return { webhookId: id, send: () => s.webhook('orders/create', sampleOrder(n), { webhookId: id }) };
    };

    const t0 = Date.now();
    s.emulator.injectFault({ mode: 'drop', forMs: OUTAGE_MS / 2, path: '/webhook/send' });
    s.emulator.injectFault({ mode: 'status500', forMs: OUTAGE_MS, path: '/webhook/send' });
    // a burst at the start of the outage, then 2 webhooks a second while it lasts
    const burst = await sendAll(
      Array.from({ length: 100 }, (_, n) => delivery(n)),
      { concurrency: 8 },
    );
    let n = 100;
    const trickle: Delivery[] = [];
    while (Date.now() - t0 < OUTAGE_MS - 5_000) {
      const d = delivery(n++);
      trickle.push(d);
      await d.send();
      await sleep(500);
    }
    const during = await statusCounts(s, ws.shopId);
    await sleep(Math.max(0, t0 + OUTAGE_MS + 200 - Date.now()));
    const failedAttempts = s.emulator
      .requests()
      .filter((r) => r.workspaceId === ws.workspaceId && r.path.includes('/webhook/send') && r.status !== 200);
    const recovery = Date.now();

    const acc = await driveUntilDelivered(s, clock, ids, 60_000, (e) => e.workspaceId === ws.workspaceId);
    const drainMs = Date.now() - recovery;
    await sleep(500);
    const final = account(ids, arrivals(s.emulator.events({ workspaceId: ws.workspaceId })));
    const attempts = await s.app.db.deliveryAttempt.count();
    const maxAttempts = await s.app.db.outboxMessage.aggregate({ _max: { attempts: true }, where: { shopId: ws.shopId } });
    const states = await statusCounts(s, ws.shopId);

    report('service down for 60 s', {
      'webhooks accepted (burst + during outage)': `${burst.accepted.length} + ${trickle.length}`,
      'message states at the end of the outage': formatCounts(during),
      'failed requests during outage (dropped / 500)': `${failedAttempts.filter((r) => r.status === 0).length} / ${failedAttempts.filter((r) => r.status === 500).length}`,
      'delivery attempts recorded': attempts,
      'most attempts for one message': maxAttempts._max.attempts ?? 0,
      'backoff skipped with the clock (s)': Math.round(acc.skippedMs / 1000),
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
    expect(failedAttempts.length).toBeGreaterThan(100);
    expect(final.missing).toEqual([]);
    expect(final.duplicates).toBe(0);
    expect(states.dead ?? 0).toBe(0);
    expect(states.delivered).toBe(ids.length);
  }, 150_000);
});
