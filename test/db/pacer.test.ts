import { Pacer } from '../../src/outbox/pacer';
import { openTestDb, testProvider } from '../helpers/db';
import { maxInWindow } from '../helpers/clock';
import type { Db } from '../../src/db/client';

describe(`pacer on ${testProvider}`, () => {
  let db: Db;
  let close: () => Promise<void>;
  let now = 1_000_000;
  beforeAll(async () => {
    ({ db, close } = await openTestDb());
  });
  afterAll(() => close());

  it('lets one send through per (1000 + guard) / limit ms, and says when to come back', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now, guardMs: 40, toleranceMs: 10 });
    const first = await pacer.tryTake('ws-a');
    expect(first).toEqual({ ok: true, limit: 10 });
    const second = await pacer.tryTake('ws-a');
    // the first send was booked at now - 10 (catch-up tolerance), so the next is 104 ms after that
    expect(second).toEqual({ ok: false, retryAt: now + 94, pausedUntil: null });
    now += 94;
    expect((await pacer.tryTake('ws-a')).ok).toBe(true);
    expect((await pacer.tryTake('ws-a')).ok).toBe(false);
  });

  it('never lets two processes put more than the limit into any sliding second', async () => {
    let t = 5_000_000;
    const p1 = new Pacer(db, testProvider, { now: () => t });
    const p2 = new Pacer(db, testProvider, { now: () => t });
    const sent: number[] = [];
    const retry = new Map<Pacer, number>([[p1, t], [p2, t]]);
    for (; t < 5_000_000 + 3_000; t += 7) {
      for (const p of [p1, p2]) {
        if (t < retry.get(p)!) continue;
        const r = await p.tryTake('ws-b');
        if (r.ok) sent.push(t);
        else retry.set(p, r.retryAt);
      }
    }
    expect(sent.length).toBeGreaterThanOrEqual(28);
    expect(maxInWindow(sent)).toBeLessThanOrEqual(10);
  });

  it('gives up a take answered late (a busy event loop) and takes again, never firing late', async () => {
    let t = 9_000_000;
    let calls = 0;
    // the first answer comes back 300 ms after it was asked: the loop was blocked
    const pacer = new Pacer(db, testProvider, { now: () => t, toleranceMs: 10 });
    const tryTake = pacer.tryTake.bind(pacer);
    pacer.tryTake = async (ws) => {
      const r = await tryTake(ws);
      if (++calls === 1) t += 300;
      return r;
    };
    const asked = t;
    const outcome = await pacer.takeSend('ws-late', { wait: async (ms) => void (t += ms) });
    expect(outcome).toEqual({ kind: 'ok' });
    // the late answer was not used: a second take, made at the time the send really leaves
    expect(calls).toBe(2);
    expect(t).toBe(asked + 300);
    // and that second take is what the next send is spaced from
    const next = await tryTake('ws-late');
    expect(!next.ok && next.retryAt).toBe(asked + 300 - 10 + 104);
  });

  it('keeps workspaces independent', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now });
    expect((await pacer.tryTake('ws-c')).ok).toBe(true);
    expect((await pacer.tryTake('ws-c')).ok).toBe(false);
    expect((await pacer.tryTake('ws-d')).ok).toBe(true);
  });

  it('follows x-ratelimit-limit and backs off after a 429', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now, guardMs: 40, toleranceMs: 0 });
    expect((await pacer.tryTake('ws-e')).ok).toBe(true);
    await pacer.observe('ws-e', { limit: 200, remaining: 150 }, false);
    now += 5000;
    expect(await pacer.tryTake('ws-e')).toEqual({ ok: true, limit: 200 });
    // 1040 ms / 200 = 5.2 ms between sends at 200/s
    const next = await pacer.tryTake('ws-e');
    expect(next.ok).toBe(false);
    expect(!next.ok && next.retryAt - now).toBe(6);
    await pacer.observe('ws-e', { limit: 200, remaining: 0 }, true, 2000);
    const after = await pacer.tryTake('ws-e');
    expect(!after.ok && after.retryAt).toBeGreaterThanOrEqual(now + 2000);
  });

  it('slows down when remaining shows someone else using the quota', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now });
    now += 10_000;
    expect((await pacer.tryTake('ws-f')).ok).toBe(true);
    // we sent 1 in the last second, yet only 2 of 10 remain: 7 were someone else's
    await pacer.observe('ws-f', { limit: 10, remaining: 2 }, false);
    const next = await pacer.tryTake('ws-f');
    expect(!next.ok && next.retryAt).toBeGreaterThanOrEqual(now + 7 * 104);
  });

  it('counts a request made before the workspace was known (key validation)', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now });
    now += 10_000;
    await pacer.record('ws-h');
    const next = await pacer.tryTake('ws-h');
    expect(!next.ok && next.retryAt).toBe(now + 104);
  });

  it('pauses a workspace until a time, for every process', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now });
    await pacer.pause('ws-g', new Date(now + 60_000), 'blocked');
    const other = new Pacer(db, testProvider, { now: () => now });
    expect((await other.state('ws-g')).pausedUntil).toEqual(new Date(now + 60_000));
    expect(await other.tryTake('ws-g')).toEqual({ ok: false, retryAt: now + 60_000, pausedUntil: new Date(now + 60_000) });
    expect(await other.takeSend('ws-g')).toEqual({ kind: 'paused', until: new Date(now + 60_000) });

    now += 61_000;
    expect((await pacer.state('ws-g')).pausedUntil).toBeNull();
    expect((await pacer.tryTake('ws-g')).ok).toBe(true);
  });

  it('says when the next send is free when it is not within the wait the caller allows', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now });
    expect((await pacer.tryTake('ws-i')).ok).toBe(true);
    // a 429 asking for 3 s
    await pacer.observe('ws-i', { limit: 10, remaining: 0 }, true, 3_000);
    expect(await pacer.takeSend('ws-i', { maxWaitMs: 2_000 })).toEqual({ kind: 'busy', until: now + 3_000 });
  });
});
