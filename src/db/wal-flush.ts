// SQLite's commits reach the disk here, off the event loop. The app's connection commits in WAL
// mode with synchronous = NORMAL: a commit is written to the WAL file but synced to disk only
// before a checkpoint (about once a second, checkpointer.ts), so an OS crash or a power loss can
// take back the last second of commits. An application crash cannot: the OS keeps what was
// written. synchronous = FULL would sync at every commit the app makes, each time with the event
// loop waiting on the disk (better-sqlite3 is synchronous). Instead, a commit that must survive a
// power loss before the app goes on (the intake's receipts, before Shopify gets its 200; a
// delivery the service accepted) asks for a flush: an fdatasync of the WAL file on libuv's thread
// pool. Concurrent commits share flushes: a flush covers every commit made before it started, so
// a caller waits at most for the one in flight and the one after it.
import fs from 'node:fs';

export interface WalFlush {
  /** Resolves once every commit made before the call is on disk; rejects when the sync failed. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Flushes the WAL of the SQLite database at `file` (its `-wal` file). */
export function createWalFlush(file: string): WalFlush {
  const walPath = `${file}-wal`;
  let handle: Promise<fs.promises.FileHandle> | null = null;
  let running: Promise<void> | null = null;
  let next: Promise<void> | null = null;
  let closed = false;

  const sync = async (): Promise<void> => {
    // opened once and kept: the WAL file lives as long as the app's connection (SQLite truncates
    // it, as after a TRUNCATE checkpoint, but deletes it only when the last connection closes)
    handle ??= fs.promises.open(walPath, 'r').catch((err: unknown) => {
      handle = null;
      throw err;
    });
    await (await handle).datasync();
  };
  const start = (): Promise<void> => {
    const p = sync().finally(() => {
      if (running === p) running = null;
    });
    running = p;
    return p;
  };

  return {
    flush() {
      if (closed) return Promise.resolve();
      // a flush in flight may have started before this caller's commit: the next one covers it
      if (next) return next;
      if (!running) return start();
      const after = running.then(
        () => undefined,
        () => undefined,
      );
      next = after.then(() => {
        next = null;
        return start();
      });
      return next;
    },
    async close() {
      closed = true;
      await next?.catch(() => undefined);
      await running?.catch(() => undefined);
      const h = handle;
      handle = null;
      await (await h?.catch(() => null))?.close();
    },
  };
}
