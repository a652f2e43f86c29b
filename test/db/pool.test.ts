// A server's PostgreSQL connections are opened at start and kept while idle: the first orders
// after a quiet spell must not wait while new server processes start (cold caches, statements
// prepared again), and each has loaded the tables' catalog entries before it is first lent out.
// A client made without the option keeps pg's default and closes idle ones.
import pg from 'pg';
import { Prisma } from '@prisma/client';
import { applyMigrations } from '../../src/db/migrate';
import { createDb, rawOf, type Db } from '../../src/db/client';
import { createTestDatabase, testProvider, type TestDatabase } from '../helpers/db';

const onPostgres = testProvider === 'postgres' ? describe : describe.skip;

onPostgres('PostgreSQL connections of a server', () => {
  let database: TestDatabase;
  const dbs: Db[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    await applyMigrations(database.url);
  });
  afterAll(async () => {
    for (const db of dbs) await db.$disconnect();
    await database.drop();
  });

  const open = async (keepConnections: boolean) => {
    const db = await createDb(database.url, { poolSize: 4, keepConnections });
    dbs.push(db);
    const raw = rawOf(db);
    if (raw.provider !== 'postgres') throw new Error('a PostgreSQL client was expected');
    return { pool: raw.pool, lazy: raw.lazy, db };
  };
  const counts = (raw: { pool: pg.Pool; lazy: pg.Pool }) => ({ main: raw.pool.totalCount, lazy: raw.lazy.totalCount });

  it("are all open once the client is made, and stay open past pg's 10-s idle timeout", async () => {
    const kept = await open(true);
    const plain = await open(false);
    expect(counts(kept)).toEqual({ main: 4, lazy: 3 });
    // the plain client opens what it uses, and its idle connections close after 10 s
    await Promise.all([plain.pool.query('SELECT 1'), plain.lazy.query('SELECT 1')]);
    expect(counts(plain)).toEqual({ main: 1, lazy: 1 });
    await new Promise((r) => setTimeout(r, 10_500));
    expect(counts(plain)).toEqual({ main: 0, lazy: 0 });
    expect(counts(kept)).toEqual({ main: 4, lazy: 3 });
    // and they still serve
    expect((await kept.pool.query<{ n: number }>('SELECT 1 AS n')).rows[0]!.n).toBe(1);
    // closing the client closes them all, though Prisma itself never ran a query
    await kept.db.$disconnect();
    expect(counts(kept)).toEqual({ main: 0, lazy: 0 });
  }, 30_000);

  it('has planned a read of every table on each connection it opened at start, before lending it out', async () => {
    // the statements each connection was sent, recorded at the driver
    const sent = new Map<unknown, string[]>();
    const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const real = proto.query;
    proto.query = function (this: unknown, ...args: unknown[]) {
      const config = args[0];
      const text = typeof config === 'string' ? config : String((config as { text?: unknown } | null)?.text ?? '');
      sent.set(this, [...(sent.get(this) ?? []), text]);
      return real.apply(this, args);
    };
    try {
      await open(true);
    } finally {
      proto.query = real;
    }
    const tables = Object.values(Prisma.ModelName);
    expect(tables).toContain('OutboxMessage');
    const firsts = [...sent.values()].map((texts) => texts.find((t) => !/^\s*SELECT "tablename"/.test(t)) ?? '');
    // 4 + 3 connections, each one's first statement (after the one that lists the tables) plans every table
    expect(firsts).toHaveLength(7);
    for (const first of firsts) for (const t of tables) expect(first).toContain(`EXPLAIN SELECT * FROM "${t}"`);
  });

  it('an error on a lent connection that no borrower hears is not an uncaught exception', async () => {
    // pg-pool takes its listener off a connection it lends; a restart reaching it before the
    // borrower adds one emits an 'error' that, unheard, is an uncaught exception and stops the
    // process. Here the borrower never adds one.
    const { pool, lazy, db } = await open(false);
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      for (const p of [pool, lazy]) {
        const client = await p.connect();
        const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        const ended = new Promise((resolve) => client.once('end', resolve));
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        await ended;
        // pg knows it is dead: what runs on it fails, and it goes back as broken
        await expect(client.query('SELECT 1')).rejects.toThrow();
        client.release(true);
      }
    } finally {
      await admin.end();
    }
    expect((await db.$queryRaw<Array<{ ok: number }>>`SELECT 1 AS ok`)[0]!.ok).toBe(1);
    expect((await lazy.query('SELECT 1 AS ok')).rows[0].ok).toBe(1);
  });
});
