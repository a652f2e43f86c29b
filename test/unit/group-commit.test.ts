import { GroupCommitter } from '../../src/db/group-commit';

const tick = () => new Promise((r) => setImmediate(r));

describe('GroupCommitter with afterWrite (a sync shared by writes, as SQLite WAL)', () => {
  it("answers a group only after its afterWrite, and starts the next group's write meanwhile", async () => {
    const log: string[] = [];
    const syncs: Array<() => void> = [];
    const gc = new GroupCommitter<number, number>({
      write: async (items) => {
        log.push(`write ${items.join(',')}`);
        return items.map((i) => i * 10);
      },
      afterWrite: () => new Promise<void>((resolve) => syncs.push(() => (log.push('synced'), resolve()))),
    });
    const first = gc.submit(1).then((r) => log.push(`answered ${r}`));
    await tick();
    await tick();
    // the first group is written and waits for its sync; a new request is written at once
    const second = gc.submit(2).then((r) => log.push(`answered ${r}`));
    await tick();
    await tick();
    expect(log).toEqual(['write 1', 'write 2']);
    syncs[0]!();
    await first;
    expect(log).toEqual(['write 1', 'write 2', 'synced', 'answered 10']);
    syncs[1]!();
    await second;
    expect(log.slice(-2)).toEqual(['synced', 'answered 20']);
  });

  it('fails every request of a group whose afterWrite fails, and goes on with the next', async () => {
    let fail = true;
    const gc = new GroupCommitter<number, number>({
      write: async (items) => items,
      afterWrite: async () => {
        if (fail) throw new Error('sync failed');
      },
    });
    await expect(Promise.all([gc.submit(1), gc.submit(2)])).rejects.toThrow('sync failed');
    fail = false;
    await expect(gc.submit(3)).resolves.toBe(3);
  });
});
