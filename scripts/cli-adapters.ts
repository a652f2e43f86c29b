// Driver adapters for the Prisma CLI's schema engine, with the three workarounds described in
// ../shared/notes/prisma-offline.md. The application's runtime adapters need none of this.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { PrismaBetterSQLite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';

export type Provider = 'sqlite' | 'postgres';

export function providerOf(url: string): Provider {
  return /^postgres(ql)?:\/\//i.test(url) ? 'postgres' : 'sqlite';
}

type Adapter = Awaited<ReturnType<PrismaPg['connect']>>;
type AnyAdapter = { executeRaw(q: { sql: string; args: unknown[] }): Promise<number>; executeScript(s: string): Promise<void> };

// Bug 1: the engine replays migration files through executeRaw; better-sqlite3 prepares one
// statement at a time, so multi-statement scripts must go to executeScript.
function scriptAwareSqlite<T extends AnyAdapter>(adapter: T): T {
  const executeRaw = adapter.executeRaw.bind(adapter);
  adapter.executeRaw = async (q) => {
    if (q.args.length === 0) {
      await adapter.executeScript(q.sql);
      return 0;
    }
    return executeRaw(q);
  };
  return adapter;
}

function sqliteFactory(url: string) {
  const file = url.replace(/^file:/, '');
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const stock = new PrismaBetterSQLite3({ url: file });
  return {
    provider: stock.provider,
    adapterName: stock.adapterName,
    connect: async () => scriptAwareSqlite((await stock.connect()) as unknown as AnyAdapter),
    connectToShadowDb: async () => scriptAwareSqlite((await stock.connectToShadowDb()) as unknown as AnyAdapter),
  };
}

// Bug 2: catalog columns of type name (19) and "char" (18) are rejected by adapter-pg 6.x.
// pg has already parsed them as strings, so relabel them as text (25).
class CatalogTolerantClient extends pg.Client {
  override query(...args: unknown[]): never {
    const relabel = (r: unknown) => {
      const fields = (r as { fields?: Array<{ dataTypeID: number }> } | undefined)?.fields;
      for (const f of fields ?? []) if (f.dataTypeID === 19 || f.dataTypeID === 18) f.dataTypeID = 25;
      return r;
    };
    // pg.Pool calls client.query with a callback; promise callers get a thenable.
    const last = args[args.length - 1];
    if (typeof last === 'function') {
      args[args.length - 1] = (err: unknown, res: unknown) => (last as (e: unknown, r: unknown) => void)(err, relabel(res));
    }
    const result = (super.query as (...a: unknown[]) => unknown)(...args);
    if (result && typeof (result as Promise<unknown>).then === 'function') {
      return (result as Promise<unknown>).then(relabel) as never;
    }
    return result as never;
  }
}

function pgConfig(url: string, database?: string): pg.PoolConfig {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username || 'postgres'),
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database: database ?? decodeURIComponent(u.pathname.replace(/^\//, '') || 'postgres'),
    Client: CatalogTolerantClient as unknown as typeof pg.Client,
    // lets the CLI exit as soon as it is done instead of waiting out the idle timeout
    allowExitOnIdle: true,
    idleTimeoutMillis: 200,
  };
}

// Bug 3: the stock shadow database is dropped while its pool is connected, and a
// connectionString overrides the shadow's database name. Build from separate fields instead.
function postgresFactory(url: string) {
  const main = new PrismaPg(new pg.Pool(pgConfig(url)));
  return {
    provider: main.provider,
    adapterName: main.adapterName,
    connect: () => main.connect(),
    connectToShadowDb: async (): Promise<Adapter> => {
      const name = `prisma_shadow_${randomBytes(6).toString('hex')}`;
      const admin = new pg.Client(pgConfig(url, 'postgres'));
      await admin.connect();
      await admin.query(`CREATE DATABASE "${name}"`);
      await admin.end();
      const pool = new pg.Pool(pgConfig(url, name));
      const adapter = await new PrismaPg(pool).connect();
      const dispose = adapter.dispose.bind(adapter);
      adapter.dispose = async () => {
        await dispose();
        await pool.end().catch(() => undefined);
        const dropper = new pg.Client(pgConfig(url, 'postgres'));
        await dropper.connect();
        await dropper.query(`DROP DATABASE IF EXISTS "${name}"`);
        await dropper.end();
      };
      return adapter;
    },
  };
}

export function cliAdapterFactory(url: string) {
  return (providerOf(url) === 'postgres' ? postgresFactory(url) : sqliteFactory(url)) as never;
}
