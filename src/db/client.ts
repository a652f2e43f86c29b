import fs from 'node:fs';
import path from 'node:path';
import { PrismaClient } from '@prisma/client';
import { PrismaBetterSQLite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';

export type Db = PrismaClient;
export type DbProvider = 'sqlite' | 'postgres';

export function providerOf(url: string): DbProvider {
  return /^postgres(ql)?:\/\//i.test(url) ? 'postgres' : 'sqlite';
}

export function sqliteFile(url: string): string {
  return url.replace(/^file:/, '');
}

/** The generated client serves one provider at a time; say so clearly when it is the wrong one. */
export function assertGeneratedFor(provider: DbProvider): void {
  const generated = readGeneratedProvider();
  if (generated && generated !== provider) {
    throw new Error(
      `the Prisma client was generated for ${generated}, but DATABASE_URL is ${provider}: run "node scripts/prisma.mjs generate" with this DATABASE_URL`,
    );
  }
}

function readGeneratedProvider(): DbProvider | null {
  try {
    const dir = path.dirname(require.resolve('.prisma/client/schema.prisma'));
    const schema = fs.readFileSync(path.join(dir, 'schema.prisma'), 'utf8');
    const m = schema.match(/provider\s*=\s*"(sqlite|postgresql)"/);
    return m ? (m[1] === 'postgresql' ? 'postgres' : 'sqlite') : null;
  } catch {
    return null;
  }
}

export interface DbOptions {
  /** PostgreSQL pool size. */
  poolSize?: number;
}

type PgFactory = InstanceType<typeof PrismaPg>;
type PgAdapter = Awaited<ReturnType<PgFactory['connect']>>;
type PgTransaction = Awaited<ReturnType<PgAdapter['startTransaction']>>;

/**
 * Prisma 6.19.3 sends COMMIT/ROLLBACK itself and only then calls the adapter's commit()/rollback(),
 * which release the pg client; when that statement fails (the connection died: a database
 * restart, a network cut), neither is called and the client stays checked out for good. Each
 * such failure shrinks the pool by one, and $disconnect() then waits for it forever. Release it.
 */
export function releasingFailedTransactions(factory: PgFactory): PgFactory {
  const connect = factory.connect.bind(factory);
  factory.connect = async () => {
    const adapter = await connect();
    const start = adapter.startTransaction.bind(adapter);
    adapter.startTransaction = async (isolationLevel) => {
      const tx: PgTransaction = await start(isolationLevel);
      const executeRaw = tx.executeRaw.bind(tx);
      tx.executeRaw = async (query) => {
        try {
          return await executeRaw(query);
        } catch (err) {
          if (query.sql === 'COMMIT' || query.sql === 'ROLLBACK') await tx.rollback().catch(() => undefined);
          throw err;
        }
      };
      return tx;
    };
    return adapter;
  };
  return factory;
}

export async function createDb(url: string, options: DbOptions = {}): Promise<Db> {
  const provider = providerOf(url);
  assertGeneratedFor(provider);
  if (provider === 'postgres') {
    const adapter = releasingFailedTransactions(new PrismaPg({ connectionString: url, max: options.poolSize ?? 10, connectionTimeoutMillis: 5000 }));
    return new PrismaClient({ adapter });
  }
  const file = sqliteFile(url);
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  // Epoch-ms timestamps let raw SQL (the claim query) compare integers.
  const adapter = new PrismaBetterSQLite3({ url: file, timeout: 10000 }, { timestampFormat: 'unixepoch-ms' });
  const db = new PrismaClient({ adapter });
  // WAL lets the HTTP intake write while the worker reads; NORMAL sync is durable at commit in WAL.
  await db.$queryRawUnsafe('PRAGMA journal_mode = WAL');
  await db.$queryRawUnsafe('PRAGMA synchronous = NORMAL');
  await db.$queryRawUnsafe('PRAGMA foreign_keys = ON');
  return db;
}
