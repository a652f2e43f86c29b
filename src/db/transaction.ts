// A transaction on the driver, for stage 2's batch: the same Prisma.sql statements as through a
// Prisma interactive transaction, without Prisma's per-query cost: its client and query compiler
// run for raw queries too, and a batch would pay them on each of its statements, BEGIN and COMMIT
// included. On SQLite the statements run on Prisma's own connection under its lock (see
// client.ts), so nothing else interleaves; on PostgreSQL on a connection of Prisma's pool.
import type { Prisma } from '@prisma/client';
import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import { rawOf, type Db } from './client';
import { execSqlite, PG_TYPES, rawTimestamp, withPoolClient } from './raw';

/** What the writes of a batch need of a transaction: Prisma's TransactionClient also fits. */
export interface SqlTx {
  $executeRaw(query: Prisma.Sql): Promise<number>;
  $queryRaw<T = unknown>(query: Prisma.Sql): Promise<T>;
}

function sqliteValue(v: unknown): unknown {
  if (v instanceof Date) return v.getTime();
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v === undefined ? null : v;
}

function pgValue(v: unknown): unknown {
  // as Prisma writes a DateTime: UTC wall time into timestamp(3)
  return v instanceof Date ? rawTimestamp('postgres', v) : v === undefined ? null : v;
}

/** A statement on the connection, prepared once and cached under its own text (raw.ts). */
const sqliteRun = (conn: BetterSqlite3.Database, text: string, params: unknown[] = []) => execSqlite(conn, text, text, params);

function sqliteTx(conn: BetterSqlite3.Database): SqlTx {
  return {
    $executeRaw: async (q) => sqliteRun(conn, q.sql, q.values.map(sqliteValue)).changes,
    $queryRaw: async <T>(q: Prisma.Sql) => sqliteRun(conn, q.sql, q.values.map(sqliteValue)).rows as T,
  };
}

function pgTx(client: pg.PoolClient): SqlTx {
  return {
    $executeRaw: async (q) => (await client.query({ text: q.text, values: q.values.map(pgValue), types: PG_TYPES })).rowCount ?? 0,
    $queryRaw: async <T>(q: Prisma.Sql) => (await client.query({ text: q.text, values: q.values.map(pgValue), types: PG_TYPES })).rows as T,
  };
}

/**
 * The same statements on the driver outside a transaction, each on its own: for the reads that
 * plan a batch (they run before its transaction, and once per batch, in stage 2's hot path).
 */
export function driverQueries(db: Db): SqlTx {
  const raw = rawOf(db);
  if (raw.provider === 'sqlite') {
    return {
      $executeRaw: (q) => raw.exclusive((conn) => sqliteRun(conn, q.sql, q.values.map(sqliteValue)).changes),
      $queryRaw: <T>(q: Prisma.Sql) => raw.exclusive((conn) => sqliteRun(conn, q.sql, q.values.map(sqliteValue)).rows as T),
    };
  }
  const run = (q: Prisma.Sql) => raw.pool.query({ text: q.text, values: q.values.map(pgValue), types: PG_TYPES });
  return {
    $executeRaw: async (q) => (await run(q)).rowCount ?? 0,
    $queryRaw: async <T>(q: Prisma.Sql) => (await run(q)).rows as T,
  };
}

export interface DriverTransactionOptions {
  /**
   * On PostgreSQL, commit without waiting for the WAL flush (SET LOCAL synchronous_commit, sent
   * with BEGIN in one round trip), for a transaction that a crash of the database may undo
   * because it can be redone from what is durable: stage 2's batch, redone from its receipts.
   * Its commit is visible at once, and any later durable commit flushes it, since the WAL is
   * flushed in order: a message it queued is claimed (a durable commit) before it is sent. SQLite
   * commits in WAL mode with synchronous = NORMAL, syncing at checkpoints or when a commit asks
   * (RawDb.flush), so the option changes nothing there.
   */
  lazyCommit?: boolean;
}

/**
 * Runs `fn` in a transaction on the driver: committed when it resolves, rolled back when it
 * throws (the error is rethrown). A connection that failed, or whose ROLLBACK failed, is
 * discarded (raw.ts withPoolClient).
 */
export async function driverTransaction<T>(db: Db, fn: (tx: SqlTx) => Promise<T>, opts: DriverTransactionOptions = {}): Promise<T> {
  const raw = rawOf(db);
  if (raw.provider === 'sqlite') {
    return raw.exclusive(async (conn) => {
      sqliteRun(conn, 'BEGIN IMMEDIATE');
      try {
        const result = await fn(sqliteTx(conn));
        sqliteRun(conn, 'COMMIT');
        return result;
      } catch (err) {
        if (conn.inTransaction) sqliteRun(conn, 'ROLLBACK');
        throw err;
      }
    });
  }
  return withPoolClient(raw.pool, async (client, discard) => {
    // one simple query, two statements: no round trip more for the option
    await client.query(opts.lazyCommit ? 'BEGIN; SET LOCAL synchronous_commit TO OFF' : 'BEGIN');
    try {
      const result = await fn(pgTx(client));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      // a ROLLBACK that fails means a broken connection: not handed out again
      await client.query('ROLLBACK').catch((e: unknown) => discard(e as Error));
      throw err;
    }
  });
}
