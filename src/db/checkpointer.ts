// SQLite's WAL, checkpointed from a worker thread of its own. With the default auto-checkpoint,
// the commit that takes the WAL past 1,000 pages copies the whole WAL into the database file
// (and syncs it) before it returns, on the event loop: every request and lane waits. At 1,000
// webhooks/s of 2 KB bodies that is a commit every second or two, and after a bulk write by
// another connection (an import, a migration) the first commit copies all of it. Here the app's
// connection never checkpoints (wal_autocheckpoint = 0); a second connection in this thread runs
// a PASSIVE checkpoint (it never blocks a reader or the writer) every interval. If the thread
// fails, the connection's auto-checkpoint is switched back on, so the WAL cannot grow unbounded.
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';

/** SQLite's own default: pages in the WAL before a checkpoint. */
const DEFAULT_AUTO_CHECKPOINT = 1000;

// Plain CommonJS, evaluated in the worker (no TypeScript loader there).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { timeout: 1000 });
db.pragma('secure_delete = ON');
let stopped = false;
const tick = () => {
  if (stopped) return;
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    if (r && r.log > 0) parentPort.postMessage({ checkpointed: r.checkpointed, log: r.log });
  } catch (err) {
    parentPort.postMessage({ error: String(err && err.message || err) });
  }
  timer = setTimeout(tick, workerData.everyMs);
};
let timer = setTimeout(tick, workerData.everyMs);
parentPort.on('message', (m) => {
  if (m !== 'stop') return;
  stopped = true;
  clearTimeout(timer);
  db.close();
  parentPort.close();
});
`;

export interface Checkpointer {
  /** Checkpoints that copied frames, so far. */
  readonly checkpoints: number;
  stop(): Promise<void>;
}

export function startCheckpointer(conn: BetterSqlite3.Database, file: string, opts: { everyMs?: number; onWarning?: (message: string) => void } = {}): Checkpointer {
  conn.pragma('wal_autocheckpoint = 0');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver: require.resolve('better-sqlite3'), file, everyMs: opts.everyMs ?? 1000 } });
  // it must not keep a process alive that is otherwise done
  worker.unref();
  let checkpoints = 0;
  let stopping = false;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  const fallBack = (message: string) => {
    if (conn.open) conn.pragma(`wal_autocheckpoint = ${DEFAULT_AUTO_CHECKPOINT}`);
    opts.onWarning?.(message);
  };
  worker.on('message', (m: { checkpointed?: number; error?: string }) => {
    if (m.error) opts.onWarning?.(`WAL checkpoint failed: ${m.error}`);
    else if (m.checkpointed) checkpoints += 1;
  });
  worker.on('error', (err) => fallBack(err.message));
  worker.on('exit', (code) => {
    if (!stopping) fallBack(`the checkpoint thread exited with ${code}`);
  });
  return {
    get checkpoints() {
      return checkpoints;
    },
    stop: async () => {
      if (stopping) return;
      stopping = true;
      worker.postMessage('stop');
      await exited;
    },
  };
}
