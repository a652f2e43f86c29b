// `npm run db:migrate`: applies pending migrations to DATABASE_URL, offline, and exits. The app
// also applies them at start; this is for deploys that migrate in a separate step.
import { applyMigrations } from './db/migrate';
import { configOrExit } from './main';

async function migrate(): Promise<void> {
  const config = configOrExit();
  const applied = await applyMigrations(config.databaseUrl);
  process.stdout.write(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}\n` : 'the database is up to date\n');
}

migrate().catch((err: unknown) => {
  process.stderr.write(`migration failed: ${(err as Error).message}\n`);
  process.exit(1);
});
