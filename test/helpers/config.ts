import { loadConfig, type Config } from '../../src/config';

/** A sandbox config for tests, on the given database and a free port. */
export function testConfig(databaseUrl: string, env: Record<string, string> = {}): Config {
  return loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: databaseUrl, LOG_LEVEL: 'error', ...env });
}
