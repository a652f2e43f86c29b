// SQLite's WAL is checkpointed by a thread of its own, never by a commit on the event loop; if
// that thread fails, the connection checkpoints itself again (the WAL never grows unbounded).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { RESTART_FRAMES, startCheckpointer } from '../../src/db/checkpointer';
import { configureSqlite } from '../../src/db/client';
import { Mutex } from '../../src/db/mutex';

const walPages = (file: string) => Math.floor(fs.statSync(`${file}-wal`).size / 4096);
/** The WAL header's checkpoint sequence number: SQLite adds one each time the WAL starts over. */
function walGeneration(file: string): number {
  const fd = fs.openSync(`${file}-wal`, 'r');
  try {
    const header = Buffer.alloc(32);
    fs.readSync(fd, header, 0, 32, 0);
    return header.readUInt32BE(12);
  } finally {
    fs.closeSync(fd);
  }
}

describe('the SQLite checkpoint thread', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkpointer-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  function open(name: string) {
    const file = path.join(dir, name);
    const conn = new Database(file);
    configureSqlite(conn);
    conn.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)');
    const insert = conn.prepare('INSERT INTO t (body) VALUES (?)');
    const write = (rows: number) =>
      conn.transaction(() => {
        for (let i = 0; i < rows; i++) insert.run('x'.repeat(2000));
      })();
    return { file, conn, write };
  }

  it('leaves the WAL to the thread: commits past 1,000 pages do not checkpoint, the thread does', async () => {
    const { file, conn, write } = open('a.db');
    // a thread that will not run for a minute: the commits alone
    const later = startCheckpointer(conn, file, { everyMs: 60_000 });
    expect(conn.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    // over 2,000 pages in commits of about 75: SQLite's default would have checkpointed at 1,000
    for (let i = 0; i < 30; i++) write(150);
    expect(walPages(file)).toBeGreaterThan(2000);
    await later.stop();
    const cp = startCheckpointer(conn, file, { everyMs: 50 });
    try {
      const deadline = Date.now() + 5_000;
      while (cp.checkpoints === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(cp.checkpoints).toBeGreaterThan(0);
      // the thread copied the frames: a checkpoint now finds nothing left to copy
      const [r] = conn.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number; checkpointed: number }>;
      expect(r!.checkpointed).toBe(r!.log);
      expect(conn.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 4500 });
    } finally {
      await cp.stop();
      conn.close();
    }
  });

  // A PASSIVE checkpoint copies the frames there were when it began; the writer starts the WAL
  // over only once a checkpoint copied all of it, which a steady stream of commits never allows.
  it("starts the WAL over under a steady stream of commits, holding the app's lock while the thread copies the rest", async () => {
    const stream = async (name: string, withHold: boolean) => {
      const { file, conn, write } = open(name);
      const lock = new Mutex();
      const cp = startCheckpointer(conn, file, { everyMs: 20, hold: withHold ? (fn) => lock.run(fn) : undefined });
      let commits = 0;
      try {
        await lock.run(() => write(1));
        const generation = walGeneration(file);
        // at least 20,000 commits of a frame or more each, and a second of checkpoints
        const end = Date.now() + 1000;
        while (commits < 20_000 || Date.now() < end) {
          // every statement of the app takes the lock (client.ts); the loop yields between commits
          await lock.run(() => write(1));
          commits += 1;
          await new Promise((r) => setImmediate(r));
        }
        return {
          startedOver: walGeneration(file) - generation,
          pages: walPages(file),
          holds: cp.holds,
          checkpoints: cp.checkpoints,
          commits,
          rows: (conn.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n,
        };
      } finally {
        await cp.stop();
        conn.close();
      }
    };
    const held = await stream('c.db', true);
    const unheld = await stream('d.db', false);
    expect(held.rows).toBe(held.commits + 1);
    // the thread asked for the hold again and again, and the WAL started over after the holds (a
    // hold that outlasts HOLD_LIMIT_MS on a loaded machine lets the stream go on unrestarted, so
    // half of them is the floor), and its file is as long as the frames between two of those
    expect(held.holds).toBeGreaterThanOrEqual(3);
    expect(held.startedOver).toBeGreaterThanOrEqual(Math.max(3, held.holds / 2));
    expect(held.pages).toBeGreaterThan(RESTART_FRAMES);
    // without a hold to take, checkpoints ran too and none held the app; how often the WAL then
    // started over by chance (the thread catching up between two commits) depends on how the two
    // threads were scheduled, so it is printed, not compared
    expect(unheld.checkpoints).toBeGreaterThan(3);
    expect(unheld.holds).toBe(0);
    process.stdout.write(
      `\n  WAL started over: held ${held.startedOver} times (${held.holds} holds, ${held.pages} pages), ` +
        `unheld ${unheld.startedOver} times (${unheld.pages} pages)\n`,
    );
  });

  it('gives the connection its own checkpoints back when the thread cannot serve its file', async () => {
    const { file, conn, write } = open('b.db');
    const warnings: string[] = [];
    // a thread that cannot open the database fails at once
    const cp = startCheckpointer(conn, path.join(dir, 'missing', 'b.db'), { everyMs: 50, onWarning: (m) => warnings.push(m) });
    try {
      const deadline = Date.now() + 5_000;
      while (warnings.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(warnings.join(' ')).toMatch(/unable to open|directory does not exist|exited/i);
      expect(conn.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
      for (let i = 0; i < 30; i++) write(150);
      // the commits past 1,000 pages checkpointed and the WAL started over: it never held them all
      expect(walPages(file)).toBeLessThan(1500);
    } finally {
      await cp.stop();
      conn.close();
    }
  });
});
