// `npm run db:migrate`: applies pending migrations to DATABASE_URL, offline, and exits. The app
// also applies them at start; this is for deploys that migrate in a separate step.
// It reads DATABASE_URL alone: a migration needs no secret.
import { loadDatabaseConfig } from './config';
import { applyMigrations } from './db/migrate';
import { configOrExit } from './main';

async function migrate(): Promise<void> {
  const config = configOrExit(undefined, loadDatabaseConfig);
  const applied = await applyMigrations(config.databaseUrl);
  process.stdout.write(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}\n` : 'the database is up to date\n');
}

migrate().catch((err: unknown) => {
  process.stderr.write(`migration failed: ${(err as Error).message}\n`);
  process.exit(1);
});
