// SQLite's WAL, checkpointed from a worker thread, never by a commit on the event loop. With
// the default auto-checkpoint, the commit that takes the WAL past 1,000 pages copies the whole
// WAL into the database file (and syncs it) before it returns, on the event loop: every request
// and lane waits. At 1,000 webhooks/s of 2 KB bodies that is a commit every second or two, and
// after a bulk write by another connection (an import, a migration) the first commit copies all
// of it. Here the app's connection never checkpoints (wal_autocheckpoint = 0); a connection of
// the thread's own runs a PASSIVE checkpoint (it never blocks a reader or the writer) every
// interval. One thread serves every database file of the process (a process has one; a test
// process opens many, and needs no thread, with its own V8 isolate, for each). If the thread cannot serve
// a file, or fails, that connection's auto-checkpoint is switched back on, so its WAL cannot
// grow unbounded.
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';

/** SQLite's own default: pages in the WAL before a checkpoint. */
const DEFAULT_AUTO_CHECKPOINT = 1000;

// Plain CommonJS, evaluated in the worker (no TypeScript loader there).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const files = new Map();
const checkpoint = (id, f) => {
  try {
    const [r] = f.db.pragma('wal_checkpoint(PASSIVE)');
    if (r && r.log > 0) parentPort.postMessage({ id, checkpointed: r.checkpointed });
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) });
  }
};
const schedule = (id, f) => {
  f.timer = setTimeout(() => {
    checkpoint(id, f);
    schedule(id, f);
  }, f.everyMs);
};
parentPort.on('message', (m) => {
  if (m.op === 'add') {
    let db;
    try {
      db = new Database(m.file, { timeout: 1000, fileMustExist: true });
      db.pragma('secure_delete = ON');
    } catch (err) {
      parentPort.postMessage({ id: m.id, failed: String((err && err.message) || err) });
      return;
    }
    const f = { db, everyMs: m.everyMs, timer: null };
    files.set(m.id, f);
    schedule(m.id, f);
  } else if (m.op === 'remove') {
    const f = files.get(m.id);
    if (!f) return;
    files.delete(m.id);
    clearTimeout(f.timer);
    f.db.close();
  }
});
`;

export interface Checkpointer {
  /** Checkpoints that copied frames, so far. */
  readonly checkpoints: number;
  stop(): Promise<void>;
}

interface Served {
  conn: BetterSqlite3.Database;
  checkpoints: number;
  onWarning?: (message: string) => void;
}

const served = new Map<number, Served>();
let thread: Worker | null = null;
let nextId = 0;

/** The connection checkpoints itself again: the thread cannot serve it. */
function fallBack(s: Served, message: string): void {
  if (s.conn.open) s.conn.pragma(`wal_autocheckpoint = ${DEFAULT_AUTO_CHECKPOINT}`);
  s.onWarning?.(message);
}

function theThread(): Worker {
  if (thread) return thread;
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver: require.resolve('better-sqlite3') } });
  worker.on('message', (m: { id: number; checkpointed?: number; error?: string; failed?: string }) => {
    const s = served.get(m.id);
    if (!s) return;
    if (m.failed !== undefined) {
      served.delete(m.id);
      fallBack(s, `the WAL checkpoint thread cannot open the database: ${m.failed}`);
    } else if (m.error !== undefined) s.onWarning?.(`WAL checkpoint failed: ${m.error}`);
    else if (m.checkpointed) s.checkpoints += 1;
  });
  const lost = (message: string) => {
    if (thread !== worker) return;
    thread = null;
    for (const s of served.values()) fallBack(s, message);
    served.clear();
  };
  worker.on('error', (err) => lost(`the WAL checkpoint thread failed: ${err.message}`));
  worker.on('exit', (code) => lost(`the WAL checkpoint thread exited with ${code}`));
  // it must not keep a process alive that is otherwise done (after the listeners: adding a
  // 'message' listener refs the worker again)
  worker.unref();
  thread = worker;
  return worker;
}

/** Hands `conn`'s WAL (the database at `file`) to the checkpoint thread until stop(). */
export function startCheckpointer(conn: BetterSqlite3.Database, file: string, opts: { everyMs?: number; onWarning?: (message: string) => void } = {}): Checkpointer {
  conn.pragma('wal_autocheckpoint = 0');
  const id = ++nextId;
  const s: Served = { conn, checkpoints: 0, onWarning: opts.onWarning };
  served.set(id, s);
  theThread().postMessage({ op: 'add', id, file, everyMs: opts.everyMs ?? 1000 });
  return {
    get checkpoints() {
      return s.checkpoints;
    },
    stop: async () => {
      if (!served.delete(id)) return;
      thread?.postMessage({ op: 'remove', id });
    },
  };
}
