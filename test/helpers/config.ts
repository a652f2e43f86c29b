import { loadConfig, type Config } from '../../src/config';

/**
 * A config for tests, on the given database and a free port: the sandbox (SANDBOX=1) fills what
 * `env` leaves out, except for a production config (NODE_ENV=production), which must give it all.
 */
export function testConfig(databaseUrl: string, env: Record<string, string> = {}): Config {
  const sandbox = env.NODE_ENV === 'production' ? {} : { SANDBOX: '1' };
  return loadConfig({ NODE_ENV: 'test', ...sandbox, PORT: '0', DATABASE_URL: databaseUrl, LOG_LEVEL: 'error', ...env });
}
