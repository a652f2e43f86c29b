// Prepared raw statements, for the few hot paths where Prisma's per-query cost dominates (the
// intake's group commit, the pacer's take). One SQL text per provider; everything else uses
// Prisma. SQLite statements run on Prisma's own connection under its lock (see client.ts);
// PostgreSQL statements are named, so each pooled connection prepares them once.
import type BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import type { DbProvider, RawDb } from './client';
import type { Dialect } from './dialect';
import { POSTGRES } from './postgres/dialect';
import { SQLITE } from './sqlite/dialect';

export interface RawStatement<R> {
  /**
   * Runs the statement; rows for a query (or a RETURNING clause), [] otherwise. Parameters given
   * as a function are computed once the statement has its connection (the SQLite lock, a
   * PostgreSQL pool client), so a time among them leaves out the wait for it.
   */
  run(params: unknown[] | (() => unknown[])): Promise<R[]>;
}

const paramsOf = (params: unknown[] | (() => unknown[])) => (typeof params === 'function' ? params() : params);

/**
 * Builds a statement's SQL for a provider. `p(n, pgType?)` is parameter n (1-based) of run()'s
 * array, cast to pgType on PostgreSQL; a parameter may appear several times.
 */
export type StatementBuilder = (p: Param, d: Dialect) => string;
export type Param = (n: number, pgType?: string) => string;

/**
 * A statement written once for one row and run for many: `build(col, rows)` on SQLite gets the
 * parameters as `col` and no `rows` (one row per run); on PostgreSQL `col(n)` is column n of
 * `rows`, an unnest over one array per parameter (untyped ones are text), which `build` puts in
 * a FROM. Run it with runRows(). The delivery worker's lanes make their statements together
 * this way (db/group-commit.ts, Coalescer).
 */
export function perRow(build: (col: Param, rows: string | null, d: Dialect) => string): StatementBuilder {
  return (p, d) => {
    if (!d.sharesRoundTrips) return build(p, null, d);
    const types = new Map<number, string>();
    const col: Param = (n, type) => (types.set(n, type ?? 'text'), `"v"."p${n}"`);
    build(col, '', d);
    const ns = [...types.keys()].sort((a, b) => a - b);
    return build(col, `unnest(${ns.map((n) => p(n, `${types.get(n)!}[]`)).join(', ')}) AS "v"(${ns.map((n) => `"p${n}"`).join(', ')})`, d);
  };
}

/** Runs a perRow() statement for rows of parameters: one array per parameter on PostgreSQL; SQLite takes exactly one row. */
export function runRows<R>(statement: RawStatement<R>, provider: DbProvider, rows: unknown[][] | (() => unknown[][])): Promise<R[]> {
  return statement.run(() => {
    const list = typeof rows === 'function' ? rows() : rows;
    if (provider !== 'postgres') {
      if (list.length !== 1) throw new Error(`a per-row statement runs one row at a time on ${provider}`);
      return list[0]!;
    }
    return list[0]!.map((_, i) => list.map((r) => r[i]));
  });
}

/** pg parses `timestamp` (no zone) as local time and int8 as a string: read both as Prisma does. */
export const PG_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (value: string) => unknown {
    if (oid === 1114) return (v: string) => new Date(`${v.replace(' ', 'T')}Z`);
    if (oid === 20) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format ?? 'text') as (value: string) => unknown;
  },
};

/**
 * Prepared statements per connection, by name. Some names are the text itself (a driver
 * transaction's statements, whose IN lists vary in length), so the cache is bounded: the oldest
 * is dropped, and prepared again if it comes back.
 */
const MAX_CACHED = 512;
const sqliteStatements = new WeakMap<BetterSqlite3.Database, Map<string, BetterSqlite3.Statement>>();

function sqliteStatement(conn: BetterSqlite3.Database, name: string, text: string): BetterSqlite3.Statement {
  let cache = sqliteStatements.get(conn);
  if (!cache) sqliteStatements.set(conn, (cache = new Map()));
  let st = cache.get(name);
  if (!st) {
    // integers as numbers: the connection defaults to BigInt (Prisma's adapter), our values fit
    st = conn.prepare(text);
    if (st.reader) st.safeIntegers(false);
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    cache.set(name, st);
  }
  return st;
}

/** Runs `text` on the SQLite connection synchronously (call inside RawDb.exclusive). */
export function runSqlite<R>(conn: BetterSqlite3.Database, name: string, text: string, params: unknown[]): R[] {
  return execSqlite<R>(conn, name, text, params).rows;
}

/** Like runSqlite, with the number of rows changed. */
export function execSqlite<R>(conn: BetterSqlite3.Database, name: string, text: string, params: unknown[]): { rows: R[]; changes: number } {
  const st = sqliteStatement(conn, name, text);
  if (st.reader) {
    const rows = st.all(...params) as R[];
    return { rows, changes: rows.length };
  }
  return { rows: [], changes: st.run(...params).changes };
}

/** A statement's SQLite text, with `?` bound in order of appearance: which parameter each one is. */
export interface SqliteStatement {
  text: string;
  order: number[];
}

export function compileSqlite(build: StatementBuilder): SqliteStatement {
  const order: number[] = [];
  // better-sqlite3 binds JS numbers as REAL: integer columns and arithmetic need the cast
  const integral = new Set(['bigint', 'integer', 'int', 'timestamp']);
  const text = build((n, type) => (order.push(n), type && integral.has(type) ? 'CAST(? AS INTEGER)' : '?'), SQLITE);
  return { text, order };
}

/** Runs a compiled statement with run()'s parameter array (call inside RawDb.exclusive). */
export function execCompiled<R>(
  conn: BetterSqlite3.Database,
  name: string,
  st: SqliteStatement,
  params: unknown[],
): { rows: R[]; changes: number } {
  return execSqlite<R>(
    conn,
    name,
    st.text,
    st.order.map((n) => params[n - 1]),
  );
}

export interface PrepareOptions {
  /**
   * On PostgreSQL, plan every execution with its parameters (an unnamed statement) rather than
   * letting the server settle on a generic plan, for a statement whose best plan depends on how
   * much data the parameters select (the claim behind a deep backlog).
   */
  replan?: boolean;
  /**
   * On PostgreSQL, run on the bookkeeping pool (RawDb.lazy), whose commits do not wait for the
   * WAL flush: for a write a database crash may lose without harm (a send time, a lease), never
   * for one a message's fate depends on, so a delivered order costs the server fewer WAL flushes.
   * SQLite commits in WAL mode with synchronous = NORMAL, syncing at checkpoints or when a commit
   * asks (RawDb.flush), so the option changes nothing there.
   */
  lazyCommit?: boolean;
}

/** A statement prepared once per connection (PostgreSQL) or cached on the connection (SQLite). */
export function prepare<R>(raw: RawDb, name: string, build: StatementBuilder, opts: PrepareOptions = {}): RawStatement<R> {
  if (raw.provider === 'sqlite') {
    const st = compileSqlite(build);
    return { run: (params) => raw.exclusive((conn) => execCompiled<R>(conn, name, st, paramsOf(params)).rows) };
  }
  const text = build((n, type) => (type ? `$${n}::${type}` : `$${n}`), POSTGRES);
  const query = (values: unknown[]) => ({ ...(opts.replan ? {} : { name }), text, values, types: PG_TYPES });
  const pool = opts.lazyCommit ? raw.lazy : raw.pool;
  return {
    run: async (params) => {
      if (typeof params !== 'function') return (await pool.query<R & pg.QueryResultRow>(query(params))).rows;
      // pool.query, but with the parameters computed once a connection is ours
      return withPoolClient(pool, async (client) => (await client.query<R & pg.QueryResultRow>(query(params()))).rows);
    },
  };
}

/**
 * Runs `fn` on a client of the pool, as pool.query does: a client whose connection reported an
 * error while it was ours (a backend that died, a restart), whose statement failed for the
 * connection's sake, or that `fn` discards, goes back as broken and is not handed out again.
 * That such an error is never an uncaught exception is the pool's own guarantee (client.ts,
 * hearEveryConnection), which also covers what pg reports while closing a discarded one.
 */
export async function withPoolClient<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient, discard: (err: Error) => void) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => (broken ??= err);
  client.on('error', onError);
  try {
    return await fn(client, onError);
  } catch (err) {
    broken ??= isConnectionError(err) ? (err as Error) : undefined;
    throw err;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}

/** An error that leaves the connection unusable (as opposed to a statement the database refused). */
function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  // SQLSTATE class 08 (connection exception), 57P (operator intervention: shutdown), or none (a socket error)
  return code === undefined || code.startsWith('08') || code.startsWith('57P');
}

/** A timestamp parameter as each provider stores it: epoch ms on SQLite, UTC wall time on PostgreSQL (as Prisma writes it). */
export function rawTimestamp(provider: DbProvider, d: Date): number | string {
  if (provider === 'sqlite') return d.getTime();
  return d.toISOString().replace('T', ' ').replace('Z', '');
}

/** A timestamp read back from a raw row. */
export function rawDate(v: unknown): Date | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v;
  return new Date(typeof v === 'bigint' ? Number(v) : (v as number | string));
}

/**
 * Lets the event loop run what is due (requests, timers, a worker thread's messages) before going
 * on. On SQLite every statement resolves at once (better-sqlite3 is synchronous), so a loop of
 * statements is one chain of microtasks: without a turn between its steps nothing else runs until
 * it ends. A turn with nothing due is cheap.
 */
export const turnOfTheLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Work done a chunk at a time (a delete of many rows): runs `step` until it says there is no more,
 * the event loop turning between steps; returns the sum of the steps' counts.
 */
export async function inChunks(step: () => Promise<{ count: number; more: boolean }>): Promise<number> {
  let total = 0;
  for (;;) {
    const { count, more } = await step();
    total += count;
    if (!more) return total;
    await turnOfTheLoop();
  }
}
