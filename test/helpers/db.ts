// A fresh, migrated database per test file: a temp SQLite file, or a new PostgreSQL database
// on the server DATABASE_URL points at when it is postgres://.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createDb, providerOf, type Db } from '../../src/db/client';
import { applyMigrations } from '../../src/db/migrate';

export const testProvider = providerOf(process.env.DATABASE_URL ?? 'file:');

export interface TestDatabase {
  url: string;
  provider: 'sqlite' | 'postgres';
  /** Removes the database entirely. */
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  if (testProvider === 'postgres') {
    const server = new URL(process.env.DATABASE_URL as string);
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name}"`);
    await admin.end();
    const url = new URL(server.toString());
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      provider: 'postgres',
      drop: async () => {
        const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await c.end();
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'connector-test-'));
  return {
    url: `file:${path.join(dir, `${name}.db`)}`,
    provider: 'sqlite',
    drop: async () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/** A migrated database and a client on it. */
export async function openTestDb(): Promise<{ db: Db; database: TestDatabase; close(): Promise<void> }> {
  const database = await createTestDatabase();
  await applyMigrations(database.url);
  const db = await createDb(database.url, { poolSize: 5 });
  return {
    db,
    database,
    close: async () => {
      await db.$disconnect();
      await database.drop();
    },
  };
}
