// The connector as its own process for the benchmarks: like `npm start`, plus a Prisma client
// for the provider of DATABASE_URL when the shared one serves the other (BENCH_PRISMA_CLIENT_DIR).
// Prints one JSON line {"ready":true,"port":N} on stdout once it listens.
import { usePrismaClientDir } from './prisma-client';

usePrismaClientDir(process.env.BENCH_PRISMA_CLIENT_DIR || undefined);

async function main(): Promise<void> {
  // required only now, so that @prisma/client resolves through the hook above
  const { configOrExit, handleSignals } = require('../src/main') as typeof import('../src/main');
  const { startServer } = require('../src/server') as typeof import('../src/server');
  const running = await startServer(configOrExit(), { host: '127.0.0.1' });
  handleSignals(running);
  process.stdout.write(`${JSON.stringify({ ready: true, port: running.port })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench app failed to start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
