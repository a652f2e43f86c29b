// The connector as its own process for the benchmarks: like `npm start` (src/main.ts), in the
// role ROLE names (web | worker | all), bound to 127.0.0.1. Prints one JSON line
// {"ready":true,"port":N} on stdout once it listens (and, for a worker role, once stage 2 and
// delivery have started).
import { configOrExit, handleSignals } from '../src/main';
import { startServer } from '../src/app/server';

async function main(): Promise<void> {
  const running = await startServer(configOrExit(), { host: '127.0.0.1' });
  handleSignals(running);
  process.stdout.write(`${JSON.stringify({ ready: true, port: running.port })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench app failed to start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
