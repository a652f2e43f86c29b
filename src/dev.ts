// `npm run dev`: the connector on embedded SQLite in sandbox mode, with the bundled service
// emulator and a simulated shop, so a newcomer sees it work with no accounts.
import { configOrExit, handleSignals } from './main';
import { startServer } from './server';

async function dev(): Promise<void> {
  const config = configOrExit({ ...process.env, NODE_ENV: process.env.NODE_ENV === 'production' ? 'development' : process.env.NODE_ENV });
  const running = await startServer(config);
  handleSignals(running);
  process.stdout.write(`\n  Connector (sandbox) running at ${config.shopify.appUrl}\n  Health: ${running.url}/healthz\n\n`);
}

dev().catch((err: unknown) => {
  process.stderr.write(`dev start-up failed: ${(err as Error).message}\n`);
  process.exit(1);
});
