// The app as its own process, with the import attached as server.ts will attach it: the kill
// test starts it, SIGKILLs it mid-import, and starts it again on the same database.
// Run: node --import tsx test/integration/backfill/child-app.ts (configuration from the environment).
import { loadConfig } from '../../../src/config';
import { createLogger } from '../../../src/observability/logger';
import { startServer } from '../../../src/app/server';
import { attachBackfill, lateRouter, stopAppRunner } from './wiring';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  const late = lateRouter();
  const app = await startServer(config, { logger, host: '127.0.0.1', worker: { safetyPollMs: 250 }, routers: [late.router] });
  await stopAppRunner(app);
  const backfill = attachBackfill(config, app, logger, {
    pollMs: 50,
    opPollMs: [50, 200],
    leaseMs: Number(process.env.BACKFILL_LEASE_MS ?? 60_000),
    maxQueued: Number(process.env.BACKFILL_MAX_QUEUED ?? 10_000),
    batchSize: Number(process.env.BACKFILL_BATCH_SIZE ?? 500),
  });
  late.set(backfill.router(backfill.auth));
  backfill.runner.start();
  process.stdout.write(`READY ${app.url}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`child app failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
