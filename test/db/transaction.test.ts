// Stage 2's transaction on the driver (src/db/transaction.ts), against the real database: what
// it commits Prisma reads back unchanged, what throws leaves nothing, and a refused statement
// neither wedges the connection nor leaks it from the pool; on PostgreSQL, a connection that dies
// while the transaction holds it fails the transaction, not the process.
import { Prisma } from '@prisma/client';
import type { Db } from '../../src/db/client';
import { insertRows } from '../../src/db/batch-sql';
import { driverTransaction } from '../../src/db/transaction';
import pg from 'pg';
import { openTestDb, testProvider } from '../helpers/db';

describe(`driverTransaction on ${testProvider}`, () => {
  let db: Db;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ db, close } = await openTestDb());
  });
  afterAll(() => close());

  const shopRow = (domain: string, at: Date) => ({
    id: `id-${domain}`,
    domain,
    tokenStatus: 'none',
    installedAt: at,
    createdAt: at,
    updatedAt: at,
    uninstalledAt: null,
  });

  it('commits: Prisma reads back the rows and their timestamps as written, to the millisecond', async () => {
    const at = new Date('2026-03-29T01:30:00.123Z');
    const rows = await driverTransaction(db, async (tx) => {
      await insertRows(tx, testProvider, 'Shop', [shopRow('a.myshopify.com', at), shopRow('b.myshopify.com', new Date(at.getTime() + 1))]);
      return tx.$queryRaw<Array<{ domain: string }>>(
        Prisma.sql`SELECT "domain" FROM "Shop" WHERE "domain" LIKE ${'%.myshopify.com'} ORDER BY "domain"`,
      );
    });
    expect(rows.map((r) => r.domain)).toEqual(['a.myshopify.com', 'b.myshopify.com']);
    const a = await db.shop.findUniqueOrThrow({ where: { domain: 'a.myshopify.com' } });
    expect(a.installedAt.toISOString()).toBe(at.toISOString());
    expect(a.uninstalledAt).toBeNull();
    // and a raw comparison with a Date parameter sees the same instant
    const later = await driverTransaction(db, (tx) =>
      tx.$queryRaw<unknown[]>(Prisma.sql`SELECT 1 FROM "Shop" WHERE "installedAt" > ${at}`),
    );
    expect(later).toHaveLength(1);
  });

  it('rolls back everything when the callback throws, and rethrows its error', async () => {
    await expect(
      driverTransaction(db, async (tx) => {
        await insertRows(tx, testProvider, 'Shop', [shopRow('c.myshopify.com', new Date())]);
        throw new Error('stop here');
      }),
    ).rejects.toThrow('stop here');
    expect(await db.shop.count({ where: { domain: 'c.myshopify.com' } })).toBe(0);
  });

  it('a statement the database refuses rolls back, and neither wedges nor leaks the connection', async () => {
    // more refusals than the pool has connections (5): a connection kept by a failure would starve it
    for (let i = 0; i < 8; i++) {
      await expect(
        driverTransaction(db, async (tx) => {
          await insertRows(tx, testProvider, 'Shop', [shopRow(`d${i}.myshopify.com`, new Date())]);
          await insertRows(tx, testProvider, 'Shop', [shopRow(`d${i}.myshopify.com`, new Date())]); // the same id and domain again
        }),
        // not toThrow: better-sqlite3's addon binds its error class once per process, so in a Jest
        // worker that ran another file first the error comes from another realm and is no `Error` here
      ).rejects.toMatchObject({ message: expect.stringMatching(/unique|constraint/i) });
    }
    expect(await db.shop.count({ where: { domain: { startsWith: 'd' } } })).toBe(0);
    await driverTransaction(db, (tx) => insertRows(tx, testProvider, 'Shop', [shopRow('e.myshopify.com', new Date())]));
    expect(await db.shop.count({ where: { domain: 'e.myshopify.com' } })).toBe(1);
  });

  const onPostgres = testProvider === 'postgres' ? it : it.skip;
  onPostgres('a connection that dies between two statements fails the transaction, not the process, and is not reused', async () => {
    // A restart of the database, caught while the callback awaits between statements: the idle
    // pg client emits 'error', which with no listener is an uncaught exception (it was: the
    // PostgreSQL restart fault test failed in CI on it).
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    try {
      // more than the pool's 5 connections: each dead one must be discarded, not handed out again
      for (let i = 0; i < 6; i++) {
        await expect(
          driverTransaction(db, async (tx) => {
            const [row] = await tx.$queryRaw<Array<{ pid: number }>>(Prisma.sql`SELECT pg_backend_pid() AS pid`);
            await admin.query('SELECT pg_terminate_backend($1)', [row!.pid]);
            await new Promise((r) => setTimeout(r, 100)); // the termination arrives while the client is idle
            await insertRows(tx, testProvider, 'Shop', [shopRow(`h${i}.myshopify.com`, new Date())]);
          }),
        ).rejects.toMatchObject({ message: expect.stringMatching(/terminat|Connection|ended/i) });
      }
    } finally {
      await admin.end();
    }
    await driverTransaction(db, (tx) => insertRows(tx, testProvider, 'Shop', [shopRow('i.myshopify.com', new Date())]));
    expect(await db.shop.count({ where: { domain: { in: ['i.myshopify.com', 'h0.myshopify.com'] } } })).toBe(1);
  });

  it('a write made outside while it is open is not rolled back with it (SQLite: it waits for the lock)', async () => {
    let outside: Promise<unknown> | undefined;
    const tx = driverTransaction(db, async (t) => {
      await insertRows(t, testProvider, 'Shop', [shopRow('f.myshopify.com', new Date())]);
      outside = db.shop.create({ data: { domain: 'g.myshopify.com' } });
      await new Promise((r) => setTimeout(r, 50));
      throw new Error('roll back');
    });
    await expect(tx).rejects.toThrow('roll back');
    await outside;
    expect(await db.shop.count({ where: { domain: 'f.myshopify.com' } })).toBe(0);
    expect(await db.shop.count({ where: { domain: 'g.myshopify.com' } })).toBe(1);
  });
});
