// 429s: first an injected storm (every send answered 429 for 8 s), then the service lowering
// the workspace's limit mid-drain. The pacer must back off and follow the limit it is told,
// and every message must still arrive once.
import { sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';
import { account, arrivals, formatCounts, maxInWindow, report, sendAll, sleep, statusCounts, waitForAll, type Delivery } from './support';

const LIMIT = 20;

describe(`a 429 storm (${testProvider})`, () => {
  let s: Stack;
  afterAll(() => s?.close());

  it('backs off during a storm of 429s and after a lowered limit, losing nothing', async () => {
    s = await startStack();
    const ws = await s.connectShop(undefined, { rateLimit: LIMIT });
    const ids: string[] = [];
    const delivery = (n: number): Delivery => {
      const id = `wh-429-${n}`;
      ids.push(id);
      return { webhookId: id, send: () => s.webhook('orders/create', sampleOrder(n), { webhookId: id }) };
    };
    const sends = () => s.emulator.requests().filter((r) => r.workspaceId === ws.workspaceId && r.path.includes('/webhook/send'));

    // phase 1: every send answered 429 (Retry-After: 1) for 8 s
    const stormStart = Date.now();
    s.emulator.injectFault({ mode: 'status429', forMs: 8_000, path: '/webhook/send' });
    const sent1 = await sendAll(
      Array.from({ length: 150 }, (_, n) => delivery(n)),
      { concurrency: 8 },
    );
    await sleep(Math.max(0, stormStart + 8_000 - Date.now()));
    const storm = sends().filter((r) => r.at >= stormStart && r.at < stormStart + 8_000);
    await waitForAll(s, ids, 30_000, (e) => e.workspaceId === ws.workspaceId);

    // phase 2: the service lowers the limit to 5/s while 50 more wait, then restores it
    const lowStart = Date.now();
    s.emulator.setRateLimit(ws.workspaceId, 5);
    const sent2 = await sendAll(
      Array.from({ length: 50 }, (_, n) => delivery(1000 + n)),
      { concurrency: 8 },
    );
    const acc = await waitForAll(s, ids, 60_000, (e) => e.workspaceId === ws.workspaceId);
    const low = sends().filter((r) => r.at >= lowStart);
    s.emulator.setRateLimit(ws.workspaceId, LIMIT);
    await sleep(500);
    const final = account(ids, arrivals(s.emulator.events({ workspaceId: ws.workspaceId })));
    const states = await statusCounts(s, ws.shopId);
    const lowAccepted = low.filter((r) => r.status === 200).map((r) => r.at);
    const lowSpan = (Math.max(...lowAccepted) - Math.min(...lowAccepted)) / 1000;

    report('429 storm', {
      'phase 1: webhooks / injected 429s in 8 s': `${sent1.accepted.length} / ${storm.filter((r) => r.status === 429).length}`,
      'phase 1: most sends in any 1 s of the storm (limit 20)': maxInWindow(storm.map((r) => r.at)),
      'phase 2: webhooks at a limit lowered to 5/s': sent2.accepted.length,
      'phase 2: real 429s from the limiter': low.filter((r) => r.status === 429).length,
      'phase 2: most sends accepted in any 1 s': maxInWindow(lowAccepted),
      'phase 2: delivered rate (per s)': ((lowAccepted.length - 1) / lowSpan).toFixed(2),
      'events expected / arrived': `${final.expected} / ${final.arrived}`,
      missing: final.missing.length,
      'duplicates (bound 0: a 429 is never processed)': final.duplicates,
      'message states': formatCounts(states),
    });
    expect(acc.missing).toEqual([]);
    expect(final.missing).toEqual([]);
    expect(final.duplicates).toBe(0);
    expect(states.dead ?? 0).toBe(0);
    // after a 429 the pacer waits at least the Retry-After: the storm is not hammered
    expect(maxInWindow(storm.map((r) => r.at))).toBeLessThanOrEqual(LIMIT);
    // the limiter never let more than the lowered limit through, and we used most of it
    expect(maxInWindow(lowAccepted)).toBeLessThanOrEqual(5);
  }, 120_000);
});
