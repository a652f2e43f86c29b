import { Coalescer } from '../../src/db/group-commit';

// A stand-in statement: records each run's items; doubles each number, refuses 13, and fails
// any run that holds a key twice (as PostgreSQL cannot update one row twice in one statement).
function statement() {
  const runs: number[][] = [];
  const run = async (items: number[]) => {
    runs.push(items);
    await new Promise((r) => setTimeout(r, 5));
    if (new Set(items.map((i) => i % 100)).size !== items.length) throw new Error('a row twice');
    if (items.includes(13)) throw new Error('refused 13');
    return items.map((i) => i * 2);
  };
  return { runs, run };
}

describe('Coalescer', () => {
  it('makes the calls of one tick in one statement, and an idle call at once', async () => {
    const s = statement();
    const c = new Coalescer<number, number>({ key: (i) => String(i % 100), run: s.run });
    expect(await c.call(1)).toBe(2);
    expect(s.runs).toEqual([[1]]);
    expect(await Promise.all([2, 3, 4, 5].map((i) => c.call(i)))).toEqual([4, 6, 8, 10]);
    expect(s.runs).toEqual([[1], [2, 3, 4, 5]]);
  });

  it('groups the calls made while a statement is in flight into the next one', async () => {
    const s = statement();
    const c = new Coalescer<number, number>({ key: (i) => String(i), run: s.run });
    const first = c.call(1);
    await new Promise((r) => setImmediate(r));
    // the first statement is in flight now: these wait for it, then go together
    const rest = Promise.all([2, 3, 4].map((i) => c.call(i)));
    expect(await first).toBe(2);
    expect(await rest).toEqual([4, 6, 8]);
    expect(s.runs).toEqual([[1], [2, 3, 4]]);
  });

  it('never puts two items with one key in one statement, and keeps their order', async () => {
    const s = statement();
    const c = new Coalescer<number, number>({ key: (i) => String(i % 100), run: s.run });
    // 7 and 107 share a key, as do 8, 108 and 208
    expect(await Promise.all([7, 107, 8, 108, 208, 9].map((i) => c.call(i)))).toEqual([14, 214, 16, 216, 416, 18]);
    expect(s.runs).toEqual([[7, 8, 9], [107, 108], [208]]);
  });

  it('runs each item of a failed statement alone, so only the item at fault fails', async () => {
    const s = statement();
    const c = new Coalescer<number, number>({ key: (i) => String(i), run: s.run });
    const results = await Promise.allSettled([12, 13, 14].map((i) => c.call(i)));
    expect(results).toEqual([
      { status: 'fulfilled', value: 24 },
      { status: 'rejected', reason: new Error('refused 13') },
      { status: 'fulfilled', value: 28 },
    ]);
    expect(s.runs).toEqual([[12, 13, 14], [12], [13], [14]]);
  });

  it('caps the items of one statement', async () => {
    const s = statement();
    const c = new Coalescer<number, number>({ key: (i) => String(i), run: s.run, maxItems: 2 });
    await Promise.all([1, 2, 3, 4, 5].map((i) => c.call(i)));
    expect(s.runs.map((r) => r.length)).toEqual([2, 2, 1]);
  });
});
