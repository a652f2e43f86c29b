// 429s: first an injected storm (the first sends of a backlog answered 429, Retry-After: 1), then
// the service lowering the workspace's limit mid-drain. The pacer must back off and follow the
// limit it is told, and every message must still arrive once. The limit is asserted on the
// pacer's own turns (test/helpers/turns.ts), not on arrival times at the emulator, which shares
// this test's event loop; how long a 429 holds the workspace back is test/db/pacer.test.ts's,
// on an injected clock.
import { sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';
import { recordTurns, type TurnRecorder } from '../helpers/turns';
import { account, arrivals, formatCounts, maxInWindow, report, sendAll, sleep, statusCounts, waitForAll, type Delivery } from './support';

const LIMIT = 20;
const LOWERED = 5;
/** Sends answered 429 in the storm. */
const STORM = 5;

describe(`a 429 storm (${testProvider})`, () => {
  let s: Stack;
  let turns: TurnRecorder;
  afterAll(async () => {
    turns?.restore();
    await s?.close();
  });

  it('backs off during a storm of 429s and after a lowered limit, losing nothing', async () => {
    s = await startStack();
    turns = recordTurns();
    const ws = await s.connectShop(undefined, { rateLimit: LIMIT });
    const ids: string[] = [];
    const delivery = (n: number): Delivery => {
      const id = `wh-429-${n}`;
      ids.push(id);
      return { webhookId: id, send: () => s.webhook('orders/create', sampleOrder(n), { webhookId: id }) };
    };
    const sends = () => s.emulator.requests().filter((r) => r.workspaceId === ws.workspaceId && r.path.includes('/webhook/send'));
    const ofWorkspace = () => turns.all().filter((t) => t.workspaceId === ws.workspaceId);

    // phase 1: the first sends answered 429 (Retry-After: 1), whatever the time they take
    s.emulator.injectFault({ mode: 'status429', count: STORM, path: '/webhook/send' });
    const sent1 = await sendAll(
      Array.from({ length: 60 }, (_, n) => delivery(n)),
      { concurrency: 8 },
    );
    await waitForAll(s, ids, 30_000, (e) => e.workspaceId === ws.workspaceId);
    const stormTurns = ofWorkspace();

    // phase 2: the service lowers the limit to 5/s while 20 more wait
    s.emulator.setRateLimit(ws.workspaceId, LOWERED);
    const sent2 = await sendAll(
      Array.from({ length: 20 }, (_, n) => delivery(1000 + n)),
      { concurrency: 8 },
    );
    const acc = await waitForAll(s, ids, 30_000, (e) => e.workspaceId === ws.workspaceId);
    s.emulator.setRateLimit(ws.workspaceId, LIMIT);
    await sleep(300);
    const final = account(ids, arrivals(s.emulator.events({ workspaceId: ws.workspaceId })));
    const states = await statusCounts(s, ws.shopId);
    // the turns the pacer spaced by the limit it was told
    const lowered = ofWorkspace()
      .filter((t) => t.limit === LOWERED)
      .map((t) => t.leftAt);
    const metrics = await (await fetch(`${s.app.url}/metrics`)).text();
    const rateLimited = Number(/^connector_pacer_events_total\{event="rate_limited"\} (\d+)$/m.exec(metrics)?.[1] ?? 0);
    const answered429 = sends().filter((r) => r.status === 429).length;

    report('429 storm', {
      'phase 1: webhooks / injected 429s': `${sent1.accepted.length} / ${STORM}`,
      'phase 1: most turns in any 1 s (limit 20)': maxInWindow(stormTurns.map((t) => t.leftAt)),
      'phase 2: webhooks at a limit lowered to 5/s': sent2.accepted.length,
      'phase 2: turns spaced by the lowered limit / most of them in any 1 s': `${lowered.length} / ${maxInWindow(lowered)}`,
      '429s answered in all / seen by the pacer': `${answered429} / ${rateLimited}`,
      'events expected / arrived': `${final.expected} / ${final.arrived}`,
      missing: final.missing.length,
      'duplicates (bound 0: a 429 is never processed)': final.duplicates,
      'message states': formatCounts(states),
    });
    expect(acc.missing).toEqual([]);
    expect(final.missing).toEqual([]);
    expect(final.duplicates).toBe(0);
    expect(states.dead ?? 0).toBe(0);
    // every 429 reached the pacer, which pushed the workspace's next send back by its Retry-After
    expect(answered429).toBeGreaterThanOrEqual(STORM);
    expect(rateLimited).toBe(answered429);
    // the storm got no more than the limit in any second
    expect(maxInWindow(stormTurns.map((t) => t.leftAt))).toBeLessThanOrEqual(LIMIT);
    // once the service said 5, the pacer spaced the sends by 5 a second: no more in any second
    expect(lowered.length).toBeGreaterThanOrEqual(15);
    expect(maxInWindow(lowered)).toBeLessThanOrEqual(LOWERED);
  }, 120_000);
});
