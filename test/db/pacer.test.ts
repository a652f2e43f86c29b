import { Pacer } from '../../src/outbox/pacer';
import { openTestDb, testProvider } from '../helpers/db';
import type { Db } from '../../src/db/client';

describe(`pacer on ${testProvider}`, () => {
  let db: Db;
  let close: () => Promise<void>;
  let now = 1_000_000;
  beforeAll(async () => {
    ({ db, close } = await openTestDb());
  });
  afterAll(() => close());

  it('hands out consecutive slots spaced (1000 + guard) / limit apart', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now, guardMs: 40 });
    const a = await pacer.reserve('ws-a', 3);
    const b = await pacer.reserve('ws-a', 2);
    expect(a.limit).toBe(10);
    expect(a.slots).toEqual([now, now + 104, now + 208]);
    expect(b.slots).toEqual([now + 312, now + 416]);
  });

  it('never lets two pacers (two processes) take the same slot, and no second holds more than the limit', async () => {
    const p1 = new Pacer(db, testProvider, { now: () => now });
    const p2 = new Pacer(db, testProvider, { now: () => now });
    const all = (await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? p1 : p2).reserve('ws-b', 1)))).flatMap((r) => r.slots).sort((x, y) => x - y);
    expect(new Set(all).size).toBe(40);
    for (let i = 0; i + 10 < all.length; i++) expect(all[i + 10]! - all[i]!).toBeGreaterThanOrEqual(1000);
  });

  it('keeps workspaces independent', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now });
    await pacer.reserve('ws-c', 50);
    const other = await pacer.reserve('ws-d', 1);
    expect(other.slots).toEqual([now]);
  });

  it('follows x-ratelimit-limit and backs off after a 429', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now });
    await pacer.reserve('ws-e', 1);
    await pacer.observe('ws-e', { limit: 200, remaining: 150 }, false);
    now += 5000;
    // 2 slots at 200/s span ceil(2 × 1040 / 200) = 11 ms
    expect((await pacer.reserve("ws-e", 2)).slots).toEqual([now, now + 6]);
    await pacer.observe('ws-e', { limit: 200, remaining: 0 }, true, 2000);
    const after = await pacer.reserve('ws-e', 1);
    expect(after.slots[0]).toBeGreaterThanOrEqual(now + 2000);
  });

  it('slows down when remaining shows someone else using the quota', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now });
    now += 10_000;
    await pacer.reserve('ws-f', 1);
    pacer.noteSend('ws-f', now);
    // we sent 1 in the last second, yet only 2 of 10 remain: 7 were someone else's
    await pacer.observe('ws-f', { limit: 10, remaining: 2 }, false);
    const next = await pacer.reserve('ws-f', 1);
    expect(next.slots[0]).toBeGreaterThanOrEqual(now + 7 * 104);
  });

  it('pauses a workspace until a time, for every process', async () => {
    const pacer = new Pacer(db, testProvider, { now: () => now });
    await pacer.pause('ws-g', new Date(now + 60_000), 'blocked');
    expect(await new Pacer(db, testProvider, { now: () => now }).pausedUntil('ws-g')).toEqual(new Date(now + 60_000));
    now += 61_000;
    expect(await pacer.pausedUntil('ws-g')).toBeNull();
  });
});
