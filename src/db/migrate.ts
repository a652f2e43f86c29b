// Applies pending migrations at start-up, in-process, and records them in Prisma's own
// _prisma_migrations table, so `prisma migrate status/deploy` agree with what ran here.
// Why not spawn `prisma migrate deploy`: on PostgreSQL the 6.19.3 CLI holds its process open
// for ~10 s after finishing (docs/operations.md#migrations), which would delay every start.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { configureSqlite, providerOf, sqliteFile, type DbProvider } from './client';

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

/**
 * The build ships both providers' migrations in dist/prisma (scripts/build.mjs); from source
 * they are read from prisma/. Either way from two levels up: src/db → root, dist/src/db → dist.
 */
export function migrationsDir(provider: DbProvider): string {
  return path.resolve(__dirname, '..', '..', 'prisma', provider, 'migrations');
}

export function readMigrations(provider: DbProvider): Migration[] {
  const dir = migrationsDir(provider);
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const sql = fs.readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

const PG_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL, "checksum" VARCHAR(64) NOT NULL, "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL, "logs" TEXT, "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`;
const SQLITE_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" TEXT PRIMARY KEY NOT NULL, "checksum" TEXT NOT NULL, "finished_at" DATETIME,
  "migration_name" TEXT NOT NULL, "logs" TEXT, "rolled_back_at" DATETIME,
  "started_at" DATETIME NOT NULL DEFAULT current_timestamp, "applied_steps_count" INTEGER UNSIGNED NOT NULL DEFAULT 0)`;

// Prisma's own advisory lock id, so the CLI and the app never migrate at the same time.
const LOCK_ID = 72707369;

/** Applies what is pending and returns the names applied. Safe to call from several processes at once. */
export async function applyMigrations(url: string): Promise<string[]> {
  const provider = providerOf(url);
  const migrations = readMigrations(provider);
  return provider === 'postgres' ? applyPg(url, migrations) : applySqlite(url, migrations);
}

async function applyPg(url: string, migrations: Migration[]): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOCK_ID]);
    await client.query(PG_TABLE);
    const done = new Set(
      (
        await client.query<{ migration_name: string }>(
          'SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
        )
      ).rows.map((r) => r.migration_name),
    );
    const applied: string[] = [];
    for (const m of migrations.filter((x) => !done.has(x.name))) {
      await client.query(m.sql);
      await client.query(
        'INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count) VALUES ($1, $2, now(), $3, now(), 1)',
        [randomUUID(), m.checksum, m.name],
      );
      applied.push(m.name);
    }
    await client.query('COMMIT');
    return applied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    await client.end();
  }
}

function applySqlite(url: string, migrations: Migration[]): string[] {
  const file = sqliteFile(url);
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const db = new Database(file, { timeout: 10000 });
  try {
    configureSqlite(db);
    db.exec(SQLITE_TABLE);
    // IMMEDIATE takes the write lock up front, so two processes starting together serialise here.
    const run = db.transaction(() => {
      const done = new Set(
        (
          db
            .prepare('SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL')
            .all() as Array<{ migration_name: string }>
        ).map((r) => r.migration_name),
      );
      const applied: string[] = [];
      for (const m of migrations.filter((x) => !done.has(x.name))) {
        db.exec(m.sql);
        db.prepare(
          'INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count) VALUES (?, ?, ?, ?, ?, 1)',
        ).run(randomUUID(), m.checksum, Date.now(), m.name, Date.now());
        applied.push(m.name);
      }
      return applied;
    });
    return run.immediate();
  } finally {
    db.close();
  }
}
