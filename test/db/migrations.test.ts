import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { applyMigrations, readMigrations } from '../../src/db/migrate';
import { createDb } from '../../src/db/client';
import { createTestDatabase, testProvider, type TestDatabase } from '../helpers/db';

const root = path.resolve(__dirname, '..', '..');

describe(`migrations on ${testProvider}`, () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database.drop());

  it('apply once, record themselves in _prisma_migrations, and are a no-op the second time', async () => {
    const first = await applyMigrations(database.url);
    expect(first).toEqual(readMigrations(testProvider).map((m) => m.name));
    expect(first.length).toBeGreaterThan(0);
    expect(await applyMigrations(database.url)).toEqual([]);
    const db = await createDb(database.url);
    try {
      const rows = await db.$queryRawUnsafe<Array<{ migration_name: string }>>('SELECT migration_name FROM "_prisma_migrations"');
      expect(rows.map((r) => r.migration_name).sort()).toEqual(first);
      // the models are usable on the migrated database
      const shop = await db.shop.create({ data: { domain: 'drift-check.myshopify.com' } });
      expect(shop.tokenStatus).toBe('none');
    } finally {
      await db.$disconnect();
    }
  });

  it('two concurrent appliers on one database apply each migration exactly once', async () => {
    const other = await createTestDatabase();
    try {
      const [a, b] = await Promise.all([applyMigrations(other.url), applyMigrations(other.url)]);
      expect([...a, ...b].sort()).toEqual(readMigrations(testProvider).map((m) => m.name));
    } finally {
      await other.drop();
    }
  });

  it('match the models: the Prisma drift check finds no difference', () => {
    const folder = path.join('prisma', testProvider);
    const res = spawnSync(
      process.execPath,
      [
        path.join(root, 'scripts', 'prisma.mjs'),
        'migrate',
        'diff',
        '--from-migrations',
        path.join(folder, 'migrations'),
        '--to-schema-datamodel',
        folder,
        '--exit-code',
      ],
      {
        cwd: root,
        encoding: 'utf8',
        env: {
          ...process.env,
          DATABASE_URL: testProvider === 'postgres' ? (process.env.DATABASE_URL as string) : 'file:./data/drift-check.db',
        },
      },
    );
    // exit code 2 means drift, 0 means clean
    expect({ status: res.status, out: res.stdout.trim().split('\n').pop() }).toEqual({ status: 0, out: 'No difference detected.' });
  }, 60000);
});
