// 403 blocks: the service blocks a workspace after repeated bad requests (the emulator's real
// rule: 10 400s in a minute), and later every send gets 403 for a few seconds (injected).
// A blocked workspace is paused and retried later; another workspace keeps delivering.
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
  waitForAll,
  type Delivery,
} from './support';

const BLOCK_MS = 4_000;

describe(`403 blocks (${testProvider})`, () => {
  let s: Stack;
  afterAll(() => s?.close());

  it('pauses a blocked workspace, keeps others going, and delivers everything once the block ends', async () => {
    const clock = testClock();
    s = await startStack({ server: { now: clock.now }, emulator: { blockMs: BLOCK_MS } });
    const a = await s.connectShop('blocked-store.myshopify.com', { rateLimit: 20 });
    const b = await s.connectShop('other-store.myshopify.com', { rateLimit: 20 });
    const order = (domain: string, id: string, n: number, email?: string): Delivery => ({
      webhookId: id,
      send: () =>
        s.webhook(
          'orders/create',
          { ...sampleOrder(n), ...(email ? { email, contact_email: email, customer: null } : {}) },
          { webhookId: id, domain },
        ),
    });

    // ten orders the service refuses (400, permanent) get shop A's workspace blocked. The app never
    // sends what it knows the service would refuse (an invalid email is skipped), so the refusals
    // are injected: the emulator counts them like any bad request.
    s.emulator.injectFault({ mode: 'status400', count: 10, path: '/webhook/send' });
    const bad = Array.from({ length: 10 }, (_, n) => order('blocked-store.myshopify.com', `wh-403-bad-${n}`, n));
    await sendAll(bad, { concurrency: 1 });
    await s.until(() => s.emulator.blockedUntil(a.workspaceId), 10_000, 'the emulator to block workspace A');
    const blockedAt = Date.now();
    const aIds = Array.from({ length: 40 }, (_, n) => `wh-403-a-${n}`);
    const bIds = Array.from({ length: 40 }, (_, n) => `wh-403-b-${n}`);
    await sendAll(
      [
        ...aIds.map((id, n) => order('blocked-store.myshopify.com', id, 100 + n)),
        ...bIds.map((id, n) => order('other-store.myshopify.com', id, 200 + n)),
      ],
      { concurrency: 8 },
    );

    // B is not held back by A's block
    const bAcc = await waitForAll(s, bIds, 20_000, (e) => e.workspaceId === b.workspaceId);
    const bDoneMs = Date.now() - blockedAt;
    const aRequests = () => s.emulator.requests().filter((r) => r.workspaceId === a.workspaceId && r.path.includes('/webhook/send'));
    const first403 = aRequests().find((r) => r.status === 403);
    const pause = await s.app.db.workspacePacer.findUnique({ where: { workspaceId: a.workspaceId } });
    // while paused, A sends nothing (beyond what was already in flight with the first 403)
    await sleep(1_500);
    const duringPause = aRequests().filter((r) => first403 && r.at > first403.at + 500).length;
    await sleep(Math.max(0, (s.emulator.blockedUntil(a.workspaceId) ?? 0) - Date.now()));

    // phase 2: every send answered 403 for 3 s, both workspaces
    const injectedAt = Date.now();
    s.emulator.injectFault({ mode: 'status403', forMs: 3_000, path: '/webhook/send' });
    const late = Array.from({ length: 20 }, (_, n) => `wh-403-late-${n}`);
    await sendAll(
      late.map((id, n) => order(n % 2 ? 'blocked-store.myshopify.com' : 'other-store.myshopify.com', id, 300 + n)),
      { concurrency: 4 },
    );
    await sleep(Math.max(0, injectedAt + 3_000 - Date.now()));

    const expected = [...aIds, ...bIds, ...late];
    const acc = await driveUntilDelivered(s, clock, expected, 30_000);
    await sleep(300);
    const final = account(expected, arrivals(s.emulator.events()));
    const requests = s.emulator.requests().filter((r) => r.path.includes('/webhook/send'));
    const aStates = await statusCounts(s, a.shopId);

    report('403 blocks', {
      'bad requests that got workspace A blocked (400, dead by contract)': bad.length,
      'A paused until (app clock)': pause?.pausedUntil?.toISOString() ?? 'not paused',
      'A sends while paused, after the first 403': duringPause,
      "B: 40 events delivered during A's block, after (s)": (bDoneMs / 1000).toFixed(1),
      '403s answered (block + injected)': requests.filter((r) => r.status === 403).length,
      'pause skipped with the clock (s)': Math.round(acc.skippedMs / 1000),
      'events expected / arrived': `${final.expected} / ${final.arrived}`,
      missing: final.missing.length,
      'duplicates (bound 0: a 403 is never processed)': final.duplicates,
      'A message states': formatCounts(aStates),
      'B message states': formatCounts(await statusCounts(s, b.shopId)),
    });
    expect(bAcc.missing).toEqual([]);
    expect(first403).toBeDefined();
    expect(pause?.pausedUntil).toBeTruthy();
    expect(duringPause).toBe(0);
    expect(final.missing).toEqual([]);
    expect(final.duplicates).toBe(0);
    expect(aStates.dead).toBe(bad.length);
    expect(aStates.delivered).toBe(aIds.length + late.length / 2);
  }, 120_000);
});
