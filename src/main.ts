// Entry point for `npm start` (compiled) and the base of `npm run dev`: read config, start, and
// shut down gracefully on SIGTERM/SIGINT.
import { ConfigError, loadConfig, type Config } from './config';
import { startServer, type RunningServer } from './app/server';

type Env = Record<string, string | undefined>;

/** The configuration `load` reads (loadConfig by default), or one `config error: …` line on stderr and exit code 1. */
export function configOrExit(env?: Env): Config;
export function configOrExit<C>(env: Env | undefined, load: (env?: Env) => C): C;
export function configOrExit(env?: Env, load: (env?: Env) => unknown = loadConfig): unknown {
  try {
    return load(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`config error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

export function handleSignals(running: { close(): Promise<void>; logger: RunningServer['logger'] }, graceMs = 20_000): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    running.logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      running.logger.error('graceful shutdown timed out; exiting');
      process.exit(1);
    }, graceMs);
    force.unref();
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        running.logger.error({ err: (err as Error).message }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function main(): Promise<void> {
  const config = configOrExit();
  const running = await startServer(config);
  handleSignals(running);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`start-up failed: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
