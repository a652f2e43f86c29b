// The database: a Prisma client for the provider DATABASE_URL names, plus the raw driver behind
// it for the few statements where Prisma's per-query cost dominates (the intake's group commit,
// the pacer). Both providers' clients are generated at build time (scripts/prisma.mjs), so one
// build serves SQLite and PostgreSQL; the choice is made here, at run time.
import fs from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import type { PrismaClient } from '@prisma/client';
import { PrismaBetterSQLite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import { startCheckpointer, type Checkpointer } from './checkpointer';
import { createWalFlush } from './wal-flush';
import { Mutex } from './mutex';

export type Db = PrismaClient;
export type DbProvider = 'sqlite' | 'postgres';

export function providerOf(url: string): DbProvider {
  return /^postgres(ql)?:\/\//i.test(url) ? 'postgres' : 'sqlite';
}

export function sqliteFile(url: string): string {
  return url.replace(/^file:/, '');
}

/**
 * The driver behind a client. SQLite: the client's own connection, entered through the same
 * lock as Prisma's queries, so a synchronous statement never lands inside someone's open
 * transaction. PostgreSQL: the pool Prisma uses.
 */
export type RawDb =
  | {
      provider: 'sqlite';
      exclusive<T>(fn: (conn: BetterSqlite3.Database) => T): Promise<T>;
      /**
       * Resolves once every commit made so far is on disk (wal-flush.ts): commits are synced at
       * checkpoints only, so one that must survive a power loss before the app goes on asks.
       */
      flush(): Promise<void>;
    }
  | {
      provider: 'postgres';
      pool: pg.Pool;
      /**
       * A small pool whose sessions commit without waiting for the WAL flush
       * (synchronous_commit = off), for bookkeeping that a crash of the database may lose
       * without harm: the pacer's send times, leases, wake-ups, "last delivered". Its commits
       * are visible to every session at once, as any commit; only durability is relaxed, and a
       * later durable commit (a delivery, a receipt) flushes them anyway. Never for anything a
       * message's fate depends on.
       */
      lazy: pg.Pool;
    };

const raws = new WeakMap<object, RawDb>();

export function rawOf(db: Db): RawDb {
  const raw = raws.get(db);
  if (!raw) throw new Error('this Prisma client was not created by createDb');
  return raw;
}

/**
 * Resolves once every commit made so far is on disk. PostgreSQL's commits are, as they return;
 * SQLite's WAL is synced for it (RawDb.flush), off the event loop.
 */
export function commitsOnDisk(db: Db): Promise<void> {
  const raw = rawOf(db);
  return raw.provider === 'sqlite' ? raw.flush() : Promise.resolve();
}

type PrismaClientClass = new (options: { adapter: unknown }) => Db;

/** The generated client of a provider: SQLite's is the default output, PostgreSQL's sits beside it. */
function clientClassFor(provider: DbProvider): PrismaClientClass {
  const id = provider === 'postgres' ? '.prisma/client-postgres' : '@prisma/client';
  let mod: { PrismaClient?: PrismaClientClass };
  try {
    // the generated client of the provider, chosen at run time: both are built, one is loaded
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod = require(id) as { PrismaClient?: PrismaClientClass };
  } catch {
    throw new Error(`the Prisma client for ${provider} is missing: run "npm run build" (or "node scripts/prisma.mjs generate")`);
  }
  if (!mod.PrismaClient) throw new Error(`the Prisma client for ${provider} is incomplete: run "node scripts/prisma.mjs generate"`);
  return mod.PrismaClient;
}

/** Connections of a PostgreSQL client's bookkeeping pool (RawDb.lazy). */
const LAZY_POOL_SIZE = 3;

export interface DbOptions {
  /** PostgreSQL pool size. */
  poolSize?: number;
  /**
   * PostgreSQL: open every connection of both pools now and keep them open while idle (a server).
   * Otherwise a connection idle for 10 s is closed (pg's default), and the first orders after a
   * quiet spell wait while new ones start: new server processes whose caches and prepared
   * statements are all cold.
   */
  keepConnections?: boolean;
  /** Told when SQLite's checkpoint thread fails (the connection then checkpoints itself again), or an idle PostgreSQL connection drops. */
  onWarning?: (message: string) => void;
}

type Factory = { connect(): Promise<Adapter> };
type Adapter = {
  queryRaw(q: Query): Promise<unknown>;
  executeRaw(q: Query): Promise<number>;
  executeScript(s: string): Promise<void>;
  startTransaction(isolationLevel?: string): Promise<Transaction>;
  dispose(): Promise<void>;
};
type Query = { sql: string; args: unknown[] };
type Transaction = { executeRaw(q: Query): Promise<number>; commit(): Promise<void>; rollback(): Promise<void> };

/**
 * Prisma 6.19.3 sends COMMIT/ROLLBACK itself and only then calls the adapter's commit() or
 * rollback(), which release the connection (PostgreSQL) or the lock (SQLite, below). When that
 * statement fails (a dead connection, a busy database), neither is called and the resource is
 * held for good: on PostgreSQL each such failure shrinks the pool by one. Release it, through
 * `release` when given (PostgreSQL: the connection is discarded, see pgTransaction).
 */
function releasingFailedEnds(tx: Transaction, release: (err: Error) => Promise<void> = () => tx.rollback()): Transaction {
  const executeRaw = tx.executeRaw.bind(tx);
  tx.executeRaw = async (query) => {
    try {
      return await executeRaw(query);
    } catch (err) {
      if (query.sql === 'COMMIT' || query.sql === 'ROLLBACK') await release(err as Error).catch(() => undefined);
      throw err;
    }
  };
  return tx;
}

/** The parts of adapter-pg's transaction (0.19 / Prisma 6.19.3) that hold its pool connection. */
type PgTransactionInternals = Transaction & { client?: pg.PoolClient; cleanup?: () => void };

/**
 * A PostgreSQL transaction whose COMMIT or ROLLBACK failed gives its connection back to the pool
 * to be destroyed, not reused. The adapter's rollback() releases it as healthy, and pg keeps a
 * released connection unless it already knows the socket closed: a backend that was terminated
 * (a restart) answers with an error first and closes after, so a connection released in between
 * would be handed to the next query, which would fail at once.
 */
function pgTransaction(tx: Transaction): Transaction {
  const internals = tx as PgTransactionInternals;
  const client = internals.client;
  if (!client || typeof client.release !== 'function') return releasingFailedEnds(tx);
  let released = false;
  const discard = async (err: Error) => {
    if (released) return;
    released = true;
    internals.cleanup?.();
    client.release(err);
  };
  // Prisma does not call commit() or rollback() after a failed end; if a later version does, the
  // connection is not released twice
  for (const method of ['commit', 'rollback'] as const) {
    const end = tx[method].bind(tx);
    tx[method] = async () => {
      if (released) return;
      released = true;
      await end();
    };
  }
  return releasingFailedEnds(tx, discard);
}

/** Runs `first` when Prisma disposes the adapter, before the adapter's own dispose. */
function beforeDispose(a: Adapter, first: () => Promise<void>): void {
  const dispose = a.dispose.bind(a);
  a.dispose = async () => {
    await first();
    await dispose();
  };
}

function wrapConnect<F extends object>(factory: F, wrap: (adapter: Adapter) => Adapter): F {
  const f = factory as unknown as Factory;
  const connect = f.connect.bind(f);
  f.connect = async () => wrap(await connect());
  return factory;
}

/**
 * SQLite: the adapter runs every query on one connection, and guards only transactions with a
 * lock. A query made outside an open interactive transaction would therefore run INSIDE it, and
 * be rolled back with it (a delivery recorded while the intake's transaction is open would vanish
 * if that transaction failed). Here every query waits for the lock, and a transaction holds it
 * until it ends, so the two never mix.
 */
function serialisedSqlite(adapter: Adapter, lock: Mutex): Adapter {
  for (const method of ['queryRaw', 'executeRaw', 'executeScript'] as const) {
    const fn = (adapter[method] as (arg: unknown) => Promise<unknown>).bind(adapter);
    (adapter as Record<string, unknown>)[method] = (arg: unknown) => lock.run(() => fn(arg));
  }
  const start = adapter.startTransaction.bind(adapter);
  adapter.startTransaction = async (isolationLevel) => {
    const release = await lock.acquire();
    try {
      const tx = releasingFailedEnds(await start(isolationLevel));
      let ended = false;
      const end = () => {
        if (!ended) {
          ended = true;
          release();
        }
      };
      for (const method of ['commit', 'rollback'] as const) {
        const fn = tx[method].bind(tx);
        tx[method] = async () => {
          try {
            await fn();
          } finally {
            end();
          }
        };
      }
      return tx;
    } catch (err) {
      release();
      throw err;
    }
  };
  return adapter;
}

/** Bytes of WAL file kept when it starts over (PRAGMA journal_size_limit). */
const WAL_SIZE_LIMIT = 64 * 1024 * 1024;

/** Pragmas for every SQLite connection the app opens. */
export function configureSqlite(conn: BetterSqlite3.Database): void {
  // WAL lets readers work while one writer commits. NORMAL: a commit survives a crash of the app
  // at once, and an OS crash or power loss once the WAL is synced (at checkpoints, or when a
  // commit asks for it off the event loop: RawDb.flush, wal-flush.ts).
  conn.pragma('journal_mode = WAL');
  conn.pragma('synchronous = NORMAL');
  conn.pragma('foreign_keys = ON');
  // Deleted rows are overwritten, not left readable in free pages: an erased customer's email
  // must not survive in the file (docs/privacy.md#on-disk).
  conn.pragma('secure_delete = ON');
  // When the WAL starts over (checkpointer.ts), a file that a burst grew past 64 MB is cut back.
  conn.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
}

/**
 * Opens a pool's connections at once (a pool with `min` then keeps them), each one warmed
 * (warmCatalog) before it is first lent out.
 */
async function fill(pool: pg.Pool, n: number): Promise<void> {
  const clients = await Promise.allSettled(Array.from({ length: n }, () => pool.connect()));
  const open = clients.flatMap((c) => (c.status === 'fulfilled' ? [c.value] : []));
  const tables = await appTables(open[0]).catch(() => []);
  await Promise.all(
    open.map(async (client) => {
      try {
        await warmCatalog(client, tables);
        client.release();
      } catch (err) {
        // a connection that failed here is not lent out: pg destroys it, the pool opens another
        client.release(err as Error);
      }
    }),
  );
  const failed = clients.find((c) => c.status === 'rejected');
  if (failed) throw failed.reason;
}

/** The app's tables in the connection's schema (not Prisma's migration log). */
export async function appTables(client: pg.ClientBase | undefined): Promise<string[]> {
  if (!client) return [];
  const { rows } = await client.query<{ name: string }>(
    `SELECT "tablename" AS "name" FROM "pg_tables" WHERE "schemaname" = current_schema() AND "tablename" <> '_prisma_migrations'`,
  );
  return rows.map((r) => r.name);
}

/**
 * Plans (EXPLAIN, nothing runs) a read of every table on a new connection. A new PostgreSQL
 * server process loads a table's and each of its indexes' catalog entries the first time a
 * statement touches them: unwarmed, the first orders after a start would pay for it on every
 * connection of the pool, while the app's one thread waits. One round trip per connection, at
 * start; a connection opened later (after a restart of the database) warms as it serves.
 */
export async function warmCatalog(client: pg.ClientBase, tables: string[]): Promise<void> {
  if (tables.length === 0) return;
  await client.query(tables.map((t) => `EXPLAIN SELECT * FROM "${t.replace(/"/g, '""')}"`).join('; '));
}

/**
 * Every connection of the pool has a listener for 'error' from its first connect to its end.
 * The server may end a connection at any moment (a restart sends each backend FATAL 57P01), also
 * in the moments pg-pool has taken its own listener off to lend it and the borrower has added
 * none (brianc/node-postgres#2762): an 'error' nobody hears is an uncaught exception, which
 * stops the process. Hearing it loses nothing: pg marks the connection unusable, so whatever
 * runs on it next fails and gives it back as broken, and the pool drops an idle one itself.
 */
function hearEveryConnection(pool: pg.Pool): void {
  pool.on('connect', (client) => client.on('error', () => undefined));
}

export async function createDb(url: string, options: DbOptions = {}): Promise<Db> {
  const provider = providerOf(url);
  const PrismaClientOf = clientClassFor(provider);
  if (provider === 'postgres') {
    const max = options.poolSize ?? 10;
    const kept = (n: number) => (options.keepConnections ? { min: n } : {});
    const pool = new pg.Pool({ connectionString: url, max, ...kept(max), connectionTimeoutMillis: 5000 });
    // its statements are one short write each: a few connections serve them
    const lazy = new pg.Pool({
      connectionString: url,
      max: LAZY_POOL_SIZE,
      ...kept(LAZY_POOL_SIZE),
      connectionTimeoutMillis: 5000,
      options: '-c synchronous_commit=off',
    });
    // an idle connection the server drops (a restart) is taken out of the pool; unheard, the
    // pool's 'error' would be an uncaught exception
    lazy.on('error', (err) => options.onWarning?.(`a bookkeeping connection to PostgreSQL failed: ${err.message}`));
    // the same for the main pool before Prisma's adapter listens (raw statements may come first)
    pool.on('error', (err) => options.onWarning?.(`an idle connection to PostgreSQL failed: ${err.message}`));
    hearEveryConnection(pool);
    hearEveryConnection(lazy);
    const adapter = wrapConnect(new PrismaPg(pool, { disposeExternalPool: true }), (a) => {
      const start = a.startTransaction.bind(a);
      a.startTransaction = async (isolationLevel) => pgTransaction(await start(isolationLevel));
      beforeDispose(a, () => lazy.end().catch(() => undefined));
      return a;
    });
    const db = new PrismaClientOf({ adapter });
    raws.set(db, { provider, pool, lazy });
    // connected first, so that $disconnect() ends the pools it would otherwise leave open
    if (options.keepConnections)
      await db
        .$connect()
        .then(() => Promise.all([fill(pool, max), fill(lazy, LAZY_POOL_SIZE)]))
        .catch((err: Error) =>
          options.onWarning?.(`could not open every PostgreSQL connection at start (they open when needed): ${err.message}`),
        );
    return db;
  }
  const file = sqliteFile(url);
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const lock = new Mutex();
  let conn: BetterSqlite3.Database | null = null;
  let checkpointer: Checkpointer | null = null;
  const wal = file === ':memory:' ? null : createWalFlush(path.resolve(file));
  // Epoch-ms timestamps let raw SQL (the claim query) compare integers.
  const adapter = wrapConnect(new PrismaBetterSQLite3({ url: file, timeout: 10000 }, { timestampFormat: 'unixepoch-ms' }), (a) => {
    conn = (a as unknown as { client: BetterSqlite3.Database }).client;
    configureSqlite(conn);
    // no commit on the event loop copies the WAL into the file: a thread of its own does
    if (file !== ':memory:') {
      // held by the app's lock while the thread lets the WAL start over (checkpointer.ts)
      checkpointer = startCheckpointer(conn, file, { onWarning: options.onWarning, hold: (fn) => lock.run(fn) });
      beforeDispose(a, async () => {
        await checkpointer?.stop();
        await wal?.close();
      });
    }
    return serialisedSqlite(a, lock);
  });
  const db = new PrismaClientOf({ adapter });
  await db.$connect();
  raws.set(db, {
    provider,
    exclusive: (fn) =>
      lock.run(() => {
        if (!conn || !conn.open) throw new Error('the SQLite connection is closed');
        return fn(conn);
      }),
    flush: () => wal?.flush() ?? Promise.resolve(),
  });
  return db;
}
