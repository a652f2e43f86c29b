// SQLite's WAL, checkpointed from a worker thread, never by a commit on the event loop. With
// the default auto-checkpoint, the commit that takes the WAL past 1,000 pages copies the whole
// WAL into the database file (and syncs it) before it returns, on the event loop: every request
// and lane waits. At 1,000 webhooks/s of 2 KB bodies that is a commit every second or two, and
// after a bulk write by another connection (an import, a migration) the first commit copies all
// of it. Here the app's connection never checkpoints (wal_autocheckpoint = 0); a connection of
// the thread's own runs a PASSIVE checkpoint (it never blocks a reader or the writer) every
// interval.
//
// A PASSIVE checkpoint copies the frames that were in the WAL when it started; the writer starts
// the WAL over from its beginning only when a checkpoint has copied all of it. Under a steady
// stream of commits one always lands while the thread copies, so the WAL would never start over:
// it would grow for as long as the stream lasts, and every sync of the receipts would have to
// commit the file's new size as well as its blocks (on ext4, a journal commit shared with every
// other file). So when a checkpoint leaves a WAL past RESTART_FRAMES, the connection's own lock
// (`hold`: no statement of the app runs) is held while the thread copies the few frames left;
// the next commit then starts the WAL over, and journal_size_limit (client.ts) gives back what a
// burst grew. Requests meanwhile wait on the lock, not on the event loop.
//
// One thread serves every database file of the process (a process has one; a test
// process opens many, and needs no thread, with its own V8 isolate, for each). If the thread cannot serve
// a file, or fails, that connection's auto-checkpoint is switched back on, so its WAL cannot
// grow unbounded.
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';

/** SQLite's own default: pages in the WAL before a checkpoint. */
const DEFAULT_AUTO_CHECKPOINT = 1000;
/** Frames a checkpoint may leave in the WAL before the connection is held for it to start over. */
export const RESTART_FRAMES = DEFAULT_AUTO_CHECKPOINT;
/** The longest the connection is held for a restart, should the thread not answer. */
const HOLD_LIMIT_MS = 1000;

// Plain CommonJS, evaluated in the worker (no TypeScript loader there).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const files = new Map();
const checkpoint = (id, f, restart) => {
  try {
    const [r] = f.db.pragma('wal_checkpoint(PASSIVE)');
    if (restart || (r && r.log > 0)) parentPort.postMessage({ id, restart, log: r ? r.log : 0, checkpointed: r ? r.checkpointed : 0 });
  } catch (err) {
    parentPort.postMessage({ id, restart, error: String((err && err.message) || err) });
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
  } else if (m.op === 'restart') {
    // the app holds its connection: nothing is written while this copies what is left
    const f = files.get(m.id);
    if (f) checkpoint(m.id, f, true);
    else parentPort.postMessage({ id: m.id, restart: true, error: 'not served' });
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
  /**
   * Times the connection was held for the WAL to start over (it also starts over on its own,
   * whenever a checkpoint catches up with the commits).
   */
  readonly holds: number;
  stop(): Promise<void>;
}

interface Served {
  conn: BetterSqlite3.Database;
  checkpoints: number;
  holds: number;
  onWarning?: (message: string) => void;
  /** Runs `fn` while no statement of the app runs on the connection (its lock). */
  hold?: (fn: () => Promise<void>) => Promise<void>;
  /** Frames in the WAL at the last periodic checkpoint. */
  lastLog?: number;
  /** A restart waits for the lock or for the thread. */
  holding?: boolean;
  /** The thread is copying for a restart: its end, called when the thread answers (or is lost). */
  restarting?: () => void;
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
  worker.on('message', (m: { id: number; restart?: boolean; log?: number; checkpointed?: number; error?: string; failed?: string }) => {
    const s = served.get(m.id);
    if (!s) return;
    if (m.restart) s.restarting?.();
    if (m.failed !== undefined) {
      served.delete(m.id);
      fallBack(s, `the WAL checkpoint thread cannot open the database: ${m.failed}`);
    } else if (m.error !== undefined) s.onWarning?.(`WAL checkpoint failed: ${m.error}`);
    else {
      if (m.checkpointed) s.checkpoints += 1;
      if (m.restart) s.holds += 1;
      else {
        // a WAL that has not grown since the last checkpoint is idle: its next commit starts it over
        if ((m.log ?? 0) > RESTART_FRAMES && m.log !== s.lastLog) restart(m.id, s, worker);
        s.lastLog = m.log;
      }
    }
  });
  const lost = (message: string) => {
    if (thread !== worker) return;
    thread = null;
    for (const s of served.values()) {
      s.restarting?.();
      fallBack(s, message);
    }
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

/**
 * A checkpoint left the WAL past RESTART_FRAMES: while the app's lock holds the connection, the
 * thread copies what is left, so that the next commit starts the WAL over.
 */
function restart(id: number, s: Served, worker: Worker): void {
  if (!s.hold || s.holding) return;
  s.holding = true;
  s.hold(
    () =>
      new Promise<void>((resolve) => {
        if (thread !== worker || !served.has(id)) return resolve();
        const end = () => {
          clearTimeout(timer);
          s.restarting = undefined;
          resolve();
        };
        const timer = setTimeout(end, HOLD_LIMIT_MS);
        s.restarting = end;
        worker.postMessage({ op: 'restart', id });
      }),
  )
    .catch((err: unknown) => s.onWarning?.(`could not hold the connection for a WAL restart: ${(err as Error).message}`))
    .finally(() => (s.holding = false));
}

export interface CheckpointerOptions {
  /** Between checkpoints (default 1 s). */
  everyMs?: number;
  onWarning?: (message: string) => void;
  /**
   * Runs `fn` while no statement of the app runs on the connection (the lock its queries take).
   * Without it the WAL starts over only when a checkpoint happens to catch up with the commits.
   */
  hold?: (fn: () => Promise<void>) => Promise<void>;
}

/** Hands `conn`'s WAL (the database at `file`) to the checkpoint thread until stop(). */
export function startCheckpointer(conn: BetterSqlite3.Database, file: string, opts: CheckpointerOptions = {}): Checkpointer {
  conn.pragma('wal_autocheckpoint = 0');
  const id = ++nextId;
  const s: Served = { conn, checkpoints: 0, holds: 0, onWarning: opts.onWarning, hold: opts.hold };
  served.set(id, s);
  theThread().postMessage({ op: 'add', id, file, everyMs: opts.everyMs ?? 1000 });
  return {
    get checkpoints() {
      return s.checkpoints;
    },
    get holds() {
      return s.holds;
    },
    stop: async () => {
      if (!served.delete(id)) return;
      s.restarting?.();
      thread?.postMessage({ op: 'remove', id });
    },
  };
}
