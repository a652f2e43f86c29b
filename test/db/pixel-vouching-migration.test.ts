// The upgrade to storefront trust (migration pixel_vouching) on a database that already holds
// storefront state: identities and waiting events the browser alone gave are deleted, and the
// storefront messages not sent yet are cancelled, never sent; everything else stays.
import Database from 'better-sqlite3';
import pg from 'pg';
import { createDb, sqliteFile } from '../../src/db/client';
import { applyMigrations, readMigrations } from '../../src/db/migrate';
import { createTestDatabase, testProvider, type TestDatabase } from '../helpers/db';

const LEDGER = `CREATE TABLE "_prisma_migrations" ("id" TEXT PRIMARY KEY NOT NULL, "checksum" TEXT NOT NULL, "finished_at" TIMESTAMP,
  "migration_name" TEXT NOT NULL, "logs" TEXT, "rolled_back_at" TIMESTAMP, "started_at" TIMESTAMP NOT NULL, "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`;

/** Runs scripts (no parameters) and statements (`?` parameters) on the raw database, without Prisma. */
async function raw(database: TestDatabase, statements: Array<[string, unknown[]]>): Promise<void> {
  if (database.provider === 'postgres') {
    const c = new pg.Client({ connectionString: database.url });
    await c.connect();
    try {
      for (const [sql, params] of statements) {
        let i = 0;
        await c.query(params.length ? sql.replace(/\?/g, () => `$${++i}`) : sql, params);
      }
    } finally {
      await c.end();
    }
    return;
  }
  const db = new Database(sqliteFile(database.url));
  try {
    for (const [sql, params] of statements) {
      if (params.length) db.prepare(sql).run(...params);
      else db.exec(sql);
    }
  } finally {
    db.close();
  }
}

describe(`the pixel_vouching migration (${testProvider})`, () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database.drop());

  it('deletes unvouched identities and waiting events, cancels unsent storefront messages, keeps the rest', async () => {
    const all = readMigrations(database.provider);
    const at = all.findIndex((m) => /_pixel_vouching$/.test(m.name));
    expect(at).toBeGreaterThan(0);
    const before = all.slice(0, at);
    // the database as the previous release left it
    const ts = (d: Date) => (database.provider === 'sqlite' ? d.getTime() : d);
    const now = new Date();
    await raw(database, [
      ...before.map((m): [string, unknown[]] => [m.sql, []]),
      [LEDGER, []],
      ...before.map((m, i): [string, unknown[]] => [
        'INSERT INTO "_prisma_migrations" ("id", "checksum", "finished_at", "migration_name", "started_at", "applied_steps_count") VALUES (?, ?, ?, ?, ?, 1)',
        [`m${i}`, m.checksum, ts(now), m.name, ts(now)],
      ]),
      [
        'INSERT INTO "Shop" ("id", "domain", "tokenStatus", "installedAt", "createdAt", "updatedAt") VALUES (?, ?, ?, ?, ?, ?)',
        ['s1', 'old.myshopify.com', 'active', ts(now), ts(now), ts(now)],
      ],
      [
        'INSERT INTO "PixelVisitor" ("shopId", "clientId", "email", "identifiedAt", "expiresAt") VALUES (?, ?, ?, ?, ?)',
        ['s1', 'c1', 'victim@example.org', ts(now), ts(new Date(now.getTime() + 86_400_000))],
      ],
      [
        'INSERT INTO "PixelEvent" ("shopId", "clientId", "name", "eventId", "occurredAt", "data", "expiresAt") VALUES (?, ?, ?, ?, ?, ?, ?)',
        ['s1', 'c2', 'product_viewed', 'e1', ts(now), '{"product_title":"Cheap pills"}', ts(new Date(now.getTime() + 3_600_000))],
      ],
      ...[
        ['pixel/events', 'cart_abandoned', 'queued'],
        ['pixel/events', 'added_to_cart', 'held'],
        ['pixel/events', 'viewed_product', 'delivered'],
        ['orders/create', 'order_placed', 'queued'],
      ].map(([topic, eventName, status], i): [string, unknown[]] => [
        'INSERT INTO "OutboxMessage" ("shopId", "sourceId", "topic", "eventName", "email", "body", "status", "runAt", "dueAt", "createdAt", "updatedAt") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        ['s1', `src-${i}`, topic, eventName, 'victim@example.org', '{}', status, ts(now), ts(now), ts(now), ts(new Date(0))],
      ]),
    ]);

    // this migration, and the ones after it
    expect(await applyMigrations(database.url)).toEqual(all.slice(at).map((m) => m.name));
    const db = await createDb(database.url, { poolSize: 2 });
    try {
      expect(await db.pixelVisitor.count()).toBe(0);
      expect(await db.pixelEvent.count()).toBe(0);
      const messages = await db.outboxMessage.findMany({ orderBy: { sourceId: 'asc' } });
      expect(messages.map((m) => [m.eventName, m.status])).toEqual([
        ['cart_abandoned', 'cancelled'],
        ['added_to_cart', 'cancelled'],
        ['viewed_product', 'delivered'],
        ['order_placed', 'queued'],
      ]);
      const cancelled = messages.filter((m) => m.status === 'cancelled');
      expect(cancelled.every((m) => /not confirmed; not sent$/.test(m.lastError ?? ''))).toBe(true);
      // stamped now, in the column's own format (Prisma reads it back as a date)
      for (const m of cancelled) expect(Math.abs(m.updatedAt.getTime() - Date.now())).toBeLessThan(60_000);
      expect(await db.shop.count()).toBe(1);
    } finally {
      await db.$disconnect();
    }
  });
});
