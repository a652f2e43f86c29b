import { Pacer } from '../../src/outbox/pacer';
import { openTestDb, testProvider } from '../helpers/db';
import { maxInWindow } from '../helpers/clock';
import { rawOf, type Db } from '../../src/db/client';

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
    expect(first).toMatchObject({ ok: true, limit: 10 });
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
    const retry = new Map<Pacer, number>([
      [p1, t],
      [p2, t],
    ]);
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

  it('moves a take answered late (a busy event loop) to the moment the send really leaves', async () => {
    let t = 9_000_000;
    let takes = 0;
    // the first answer comes back 300 ms after it was asked: the loop was blocked
    const pacer = new Pacer(db, testProvider, { now: () => t, toleranceMs: 10 });
    const tryTake = pacer.tryTake.bind(pacer);
    pacer.tryTake = async (ws) => {
      const r = await tryTake(ws);
      if (++takes === 1) t += 300;
      return r;
    };
    const asked = t;
    const outcome = await pacer.takeSend('ws-late', { wait: async (ms) => void (t += ms) });
    expect(outcome).toMatchObject({ kind: 'ok' });
    // no one took a send meanwhile, so the late take is used, not thrown away
    expect(takes).toBe(1);
    expect(t).toBe(asked + 300);
    // and the next send is spaced from when this one really left, not from when it was asked
    const next = await tryTake('ws-late');
    expect(!next.ok && next.retryAt).toBe(asked + 300 - 10 + 104);
  });

  it('gives up a late take when another process took a send meanwhile, and takes again', async () => {
    let t = 12_000_000;
    let takes = 0;
    const other = new Pacer(db, testProvider, { now: () => t });
    const pacer = new Pacer(db, testProvider, { now: () => t, toleranceMs: 10 });
    const tryTake = pacer.tryTake.bind(pacer);
    const sent: number[] = [];
    pacer.tryTake = async (ws) => {
      const r = await tryTake(ws);
      if (++takes === 1) {
        // blocked 300 ms: the other process took (and fired) the next send in that time
        t += 200;
        const o = await other.tryTake(ws);
        expect(o.ok).toBe(true);
        sent.push(t);
        t += 100;
      }
      return r;
    };
    expect(await pacer.takeSend('ws-late-2', { wait: async (ms) => void (t += ms) })).toMatchObject({ kind: 'ok' });
    sent.push(t);
    // ours waited for a slot after the other's instead of leaving right after it
    expect(takes).toBeGreaterThan(1);
    expect(sent[1]! - sent[0]!).toBeGreaterThanOrEqual(104 - 10);
  });

  it('spaces the next send from a request written late, unless another process took a send before it left', async () => {
    let t = 18_000_000;
    const events: string[] = [];
    const pacer = new Pacer(db, testProvider, { now: () => t, onEvent: (e) => events.push(e) });
    const took = await pacer.takeSend('ws-write', { wait: async (ms) => void (t += ms) });
    expect(took.kind).toBe('ok');
    if (took.kind !== 'ok') return;
    // written 5 ms after its turn: within the tolerance, nothing moves (the first turn of a
    // workspace caught up the 10 ms tolerance)
    await pacer.sent('ws-write', took, took.at + 5);
    expect(await pacer.tryTake('ws-write')).toMatchObject({ ok: false, retryAt: took.at - 10 + 104 });
    // written 60 ms after its turn (a connection to open): the next send is spaced from then
    await pacer.sent('ws-write', took, took.at + 60);
    expect(await pacer.tryTake('ws-write')).toMatchObject({ ok: false, retryAt: took.at + 60 - 10 + 104 });
    expect(events).toEqual(['sent', 'moved']);

    // a second process took the next send before ours was written: nothing to move, and counted
    t += 1_000;
    const again = await pacer.takeSend('ws-write', { wait: async (ms) => void (t += ms) });
    if (again.kind !== 'ok') throw new Error('expected a turn');
    t += 104;
    expect((await new Pacer(db, testProvider, { now: () => t }).tryTake('ws-write')).ok).toBe(true);
    await pacer.sent('ws-write', again, t + 1);
    expect(events.slice(2)).toEqual(['sent', 'crowded']);
  });

  it("does not take its own sends for someone else's when answers come back late", async () => {
    let t = 15_000_000;
    const pacer = new Pacer(db, testProvider, { now: () => t });
    const sentAt: number[] = [];
    for (let i = 0; i < 10; i++) {
      expect(await pacer.takeSend('ws-own', { wait: async (ms) => void (t += ms) })).toMatchObject({ kind: 'ok' });
      sentAt.push(t);
    }
    // the tenth answer arrives 80 ms after it was sent; the service had counted all ten of ours
    // in the second before the tenth reached it, the first included
    t += 80;
    await pacer.observe('ws-own', { limit: 10, remaining: 0 }, false, undefined, sentAt[9]);
    const next = await pacer.tryTake('ws-own');
    // not pushed back: the next send is free one interval after the tenth, as without the answer
    expect(!next.ok && next.retryAt).toBe(sentAt[9]! + 104);
  });

  it('makes the row of a workspace met for the first time, and writes no limit the service reports that is already in it', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now });
    const made = now;
    expect(await pacer.tryTake('ws-new')).toMatchObject({ ok: true, limit: 10 });
    const row = () =>
      db.workspacePacer.findUniqueOrThrow({ where: { workspaceId: 'ws-new' }, select: { limitPerSec: true, updatedAt: true } });
    expect(await row()).toEqual({ limitPerSec: 10, updatedAt: new Date(made) });
    now += 1_000;
    await pacer.observe('ws-new', { limit: 10 }, false);
    expect(await row()).toEqual({ limitPerSec: 10, updatedAt: new Date(made) });
    await pacer.observe('ws-new', { limit: 50 }, false);
    expect(await row()).toEqual({ limitPerSec: 50, updatedAt: new Date(now) });
    // a second process meets the row another one made: it learns the limit from the first answer
    const other = new Pacer(db, testProvider, { now: () => now });
    expect(await other.tryTake('ws-new')).toMatchObject({ ok: true, limit: 50 });
  });

  it('trusts a row the caller has read: no insert before the first take, no write of a limit already there', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now });
    // the worker read the row (with the shop's connection) and passes on what it saw
    const written = new Date(now - 60_000);
    await db.workspacePacer.create({ data: { workspaceId: 'ws-k', limitPerSec: 10, nextSendUs: 0n, updatedAt: written } });
    pacer.knownRow('ws-k', 10);
    const row = () =>
      db.workspacePacer.findUniqueOrThrow({ where: { workspaceId: 'ws-k' }, select: { limitPerSec: true, updatedAt: true } });
    expect(await pacer.tryTake('ws-k')).toMatchObject({ ok: true, limit: 10 });
    await pacer.observe('ws-k', { limit: 10 }, false);
    expect(await row()).toEqual({ limitPerSec: 10, updatedAt: written });
    await pacer.observe('ws-k', { limit: 20 }, false);
    expect(await row()).toEqual({ limitPerSec: 20, updatedAt: new Date(now) });
    // a row that went meanwhile (shop/redact) is created again on the next try
    await db.workspacePacer.delete({ where: { workspaceId: 'ws-k' } });
    now += 1_000;
    expect(await pacer.tryTake('ws-k')).toMatchObject({ ok: false });
    expect(await pacer.tryTake('ws-k')).toMatchObject({ ok: true });
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
    expect(await pacer.tryTake('ws-e')).toMatchObject({ ok: true, limit: 200 });
    // 1040 ms / 200 = 5.2 ms between sends at 200/s
    const next = await pacer.tryTake('ws-e');
    expect(next.ok).toBe(false);
    expect(!next.ok && next.retryAt - now).toBe(6);
    await pacer.observe('ws-e', { limit: 200, remaining: 0 }, true, 2000);
    const after = await pacer.tryTake('ws-e');
    expect(!after.ok && after.retryAt).toBeGreaterThanOrEqual(now + 2000);
  });

  it("does not take the sends of another process sharing the workspace for someone else's", async () => {
    let t = 25_000_000;
    const one = new Pacer(db, testProvider, { now: () => t });
    const two = new Pacer(db, testProvider, { now: () => t });
    const wait = async (ms: number) => void (t += ms);
    // two processes alternate the workspace's turns: ten sends in one second, five each
    for (let i = 0; i < 10; i++) expect(await (i % 2 ? two : one).takeSend('ws-two', { wait })).toMatchObject({ kind: 'ok' });
    const last = t;
    t += 30;
    // the tenth request's process reads its answer: the service counted all ten, five of them the
    // other process's, and none someone else's, so nothing is pushed back
    await two.observe('ws-two', { limit: 10, remaining: 0 }, false, undefined, last);
    const next = await one.tryTake('ws-two');
    expect(!next.ok && next.retryAt).toBe(last + 104);
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

  // PostgreSQL: the lanes of a worker take their sends at once; one round trip carries them all
  (testProvider === 'postgres' ? it : it.skip)(
    'takes the sends of concurrent lanes in one statement, never two of one workspace together',
    async () => {
      const raw = rawOf(db);
      if (raw.provider !== 'postgres') throw new Error('postgres only');
      let t = 40_000_000;
      const pacer = new Pacer(db, testProvider, { now: () => t });
      const workspaces = Array.from({ length: 20 }, (_, i) => `ws-many-${i}`);
      for (const ws of workspaces) expect((await pacer.tryTake(ws)).ok).toBe(true);
      t += 60_000;
      const connects = jest.spyOn(raw.lazy, 'connect');
      try {
        // 20 workspaces, and a second take for the first one, all in one tick
        const takes = await Promise.all([...workspaces, workspaces[0]!].map((ws) => pacer.tryTake(ws)));
        expect(takes.slice(0, 20).every((x) => x.ok)).toBe(true);
        // the second take of ws-many-0 went after the first (not in its statement) and found the interval taken
        expect(takes[20]).toMatchObject({ ok: false, retryAt: t - 10 + 104 });
        expect(connects).toHaveBeenCalledTimes(2);
      } finally {
        connects.mockRestore();
      }
    },
  );

  // PostgreSQL: the pacer's writes are bookkeeping, committed without waiting for the WAL flush
  // (db/raw.ts lazyCommit), on a pool of their own; a delivery's record is not.
  (testProvider === 'postgres' ? it : it.skip)(
    'takes its sends on the bookkeeping pool, whose sessions do not wait for the WAL flush',
    async () => {
      const raw = rawOf(db);
      if (raw.provider !== 'postgres') throw new Error('postgres only');
      const setting = async (pool: typeof raw.pool) =>
        (await pool.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit;
      expect(await setting(raw.lazy)).toBe('off');
      expect(await setting(raw.pool)).toBe('on');
      const lazy = jest.spyOn(raw.lazy, 'connect');
      const durable = jest.spyOn(raw.pool, 'connect');
      try {
        const pacer = new Pacer(db, testProvider, { now: () => now });
        now += 60_000;
        expect((await pacer.tryTake('ws-lazy')).ok).toBe(true);
        expect(lazy).toHaveBeenCalled();
        expect(durable).not.toHaveBeenCalled();
        // and the take is seen at once by another session, as any commit
        const row = await db.workspacePacer.findUnique({ where: { workspaceId: 'ws-lazy' } });
        expect(Number(row!.nextSendUs)).toBeGreaterThan((now - 10) * 1000);
      } finally {
        lazy.mockRestore();
        durable.mockRestore();
      }
    },
  );
});
