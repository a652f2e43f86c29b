// A transaction on the driver, for stage 2's batch: the same Prisma.sql statements as through a
// Prisma interactive transaction, without Prisma's per-query cost. A CPU profile of the
// latency benchmark put 29% of the app's busy time in Prisma's client and query compiler, which
// runs for raw queries too (about 0.25 ms each); a batch of one order ran eight of them plus
// BEGIN and COMMIT. On SQLite the statements run on Prisma's own connection under its lock (see
// client.ts), so nothing else interleaves; on PostgreSQL on a connection of Prisma's pool.
import type { Prisma } from '@prisma/client';
import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import { rawOf, type Db } from './client';
import { execSqlite, PG_TYPES, rawTimestamp } from './raw';

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
 * Runs `fn` in a transaction on the driver: committed when it resolves, rolled back when it
 * throws (the error is rethrown). A connection whose COMMIT or ROLLBACK failed is discarded.
 */
export async function driverTransaction<T>(db: Db, fn: (tx: SqlTx) => Promise<T>): Promise<T> {
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
  const client = await raw.pool.connect();
  let broken: Error | undefined;
  // While checked out, a pg client has no 'error' listener (pg-pool removes its own): a backend
  // that dies while we await between statements (a restart) would be an uncaught exception and
  // take the process down. Note it instead; the next statement fails, and the client is dropped.
  const onError = (err: Error) => (broken ??= err);
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    try {
      const result = await fn(pgTx(client));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch((e: unknown) => (broken = e as Error));
      throw err;
    }
  } catch (err) {
    broken ??= isConnectionError(err) ? (err as Error) : undefined;
    throw err;
  } finally {
    // a discarded client keeps the listener: pg may still report the dead socket while closing it
    if (!broken) client.removeListener('error', onError);
    client.release(broken);
  }
}

/** An error that leaves the connection unusable (as opposed to a statement the database refused). */
function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  // SQLSTATE class 08 (connection exception), 57P (operator intervention: shutdown), or none (a socket error)
  return code === undefined || code.startsWith('08') || code.startsWith('57P');
}
