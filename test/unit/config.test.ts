import { ConfigError, loadConfig } from '../../src/config';

const prodEnv = {
  NODE_ENV: 'production',
  SHOPIFY_API_KEY: 'client-id',
  SHOPIFY_API_SECRET: 'client-secret',
  SHOPIFY_APP_URL: 'https://connector.example.com',
  SERVICE_BASE_URL: 'https://service.example.com',
  ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
};

describe('loadConfig', () => {
  it('gives sandbox defaults for every Shopify and service variable outside production', () => {
    const c = loadConfig({});
    expect(c.sandbox).toBe(true);
    expect(c.port).toBe(3000);
    expect(c.databaseUrl).toBe('file:./data/connector.db');
    expect(c.dbProvider).toBe('sqlite');
    expect(c.shopify.appUrl).toBe('http://localhost:3000');
    expect(c.service.webhookUrl).toBe(c.service.baseUrl);
    expect(c.encryption.key).toHaveLength(32);
    expect(c.shopify.scopes).toEqual(['read_orders', 'read_customers', 'read_checkouts', 'read_fulfillments']);
  });

  it('reads a complete production environment', () => {
    const c = loadConfig({ ...prodEnv, DATABASE_URL: 'postgresql://u@db:5432/x', SERVICE_WEBHOOK_URL: 'https://hooks.example.com/', PORT: '8080' });
    expect(c.production).toBe(true);
    expect(c.dbProvider).toBe('postgres');
    expect(c.service.webhookUrl).toBe('https://hooks.example.com');
    expect(c.port).toBe(8080);
  });

  it.each(['SHOPIFY_API_KEY', 'SHOPIFY_API_SECRET', 'SHOPIFY_APP_URL', 'SERVICE_BASE_URL', 'ENCRYPTION_KEY'])(
    'requires %s in production, naming it in one line',
    (name) => {
      const env: Record<string, string> = { ...prodEnv };
      delete env[name];
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(`${name} is required when NODE_ENV=production`);
    },
  );

  it('treats an empty value as missing', () => {
    expect(() => loadConfig({ ...prodEnv, SHOPIFY_API_SECRET: '' })).toThrow('SHOPIFY_API_SECRET is required');
  });

  it.each([
    ['PORT', 'eighty'],
    ['DATABASE_URL', 'mysql://x'],
    ['ENCRYPTION_KEY', 'c2hvcnQ='],
    ['SERVICE_BASE_URL', 'not a url'],
    ['LOG_LEVEL', 'verbose'],
  ])('rejects a malformed %s, naming it', (name, value) => {
    expect(() => loadConfig({ ...prodEnv, [name]: value })).toThrow(new RegExp(`^${name} is invalid`));
  });

  it('refuses SHOPIFY_ADMIN_ORIGIN in production and allows it in development', () => {
    expect(() => loadConfig({ ...prodEnv, SHOPIFY_ADMIN_ORIGIN: 'http://127.0.0.1:9999' })).toThrow(/SHOPIFY_ADMIN_ORIGIN is for development and tests only/);
    expect(loadConfig({ SHOPIFY_ADMIN_ORIGIN: 'http://127.0.0.1:9999/' }).shopify.adminOrigin).toBe('http://127.0.0.1:9999');
  });

  it('requires an https app URL in production', () => {
    expect(() => loadConfig({ ...prodEnv, SHOPIFY_APP_URL: 'http://plain.example.com' })).toThrow(/SHOPIFY_APP_URL is invalid/);
  });

  it('runs everything in one process by default, or the role ROLE names (WORKER_ENABLED=false is the old spelling of web)', () => {
    expect(loadConfig({})).toMatchObject({ role: 'all', webEnabled: true, workerEnabled: true });
    expect(loadConfig({ ROLE: 'web' })).toMatchObject({ role: 'web', webEnabled: true, workerEnabled: false });
    expect(loadConfig({ ROLE: 'worker' })).toMatchObject({ role: 'worker', webEnabled: false, workerEnabled: true });
    expect(loadConfig({ WORKER_ENABLED: 'false' })).toMatchObject({ role: 'web', workerEnabled: false });
    expect(() => loadConfig({ ROLE: 'both' })).toThrow(/^ROLE is invalid/);
    expect(() => loadConfig({ ROLE: 'web', WORKER_ENABLED: 'true' })).toThrow(/WORKER_ENABLED is a deprecated alias of ROLE/);
  });

  it('reads the delivery, checkout and retention settings, with their defaults', () => {
    expect(loadConfig({})).toMatchObject({ databasePoolSize: 10, worker: { lanes: 32, maxSendsPerMessage: 8 }, checkouts: { graceMinutes: 10, maxAgeDays: 7 }, receiptRetentionDays: 7 });
    expect(loadConfig({ DATABASE_POOL_SIZE: '24' }).databasePoolSize).toBe(24);
    expect(() => loadConfig({ DATABASE_POOL_SIZE: '0' })).toThrow(/^DATABASE_POOL_SIZE is invalid/);
    const c = loadConfig({ WORKER_LANES: '200', MAX_SENDS_PER_MESSAGE: '3', CHECKOUT_GRACE_MINUTES: '0', CHECKOUT_MAX_AGE_DAYS: '30', RECEIPT_RETENTION_DAYS: '14' });
    expect(c).toMatchObject({ worker: { lanes: 200, maxSendsPerMessage: 3 }, checkouts: { graceMinutes: 0, maxAgeDays: 30 }, receiptRetentionDays: 14 });
    expect(() => loadConfig({ WORKER_LANES: '0' })).toThrow(/^WORKER_LANES is invalid/);
  });
});
