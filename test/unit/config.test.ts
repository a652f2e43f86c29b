import { ConfigError, DEFAULT_SCOPES, loadConfig, loadDatabaseConfig, loadDevConfig, SANDBOX_DEFAULTS } from '../../src/config';
import { PIXEL_RATES } from '../../src/http/pixel.route';
import { STOREFRONT_LOOKUPS_PER_MINUTE } from '../../src/integrations/shopify/products';
import { DEFAULT_TUNING } from '../../src/outbox/delivery/tuning';
import { DEFAULT_GUARD_MS } from '../../src/outbox/pacer';
import { DEFAULT_SETTINGS } from '../../src/settings/settings';

/** Every variable without a default, given: what a staging or production deploy sets. */
const fullEnv = {
  SHOPIFY_API_KEY: 'client-id',
  SHOPIFY_API_SECRET: 'client-secret',
  SHOPIFY_APP_URL: 'https://connector.example.com',
  SERVICE_BASE_URL: 'https://service.example.com',
  ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
};
const sandbox = { SANDBOX: '1' };

const prodEnv = {
  NODE_ENV: 'production',
  SHOPIFY_API_KEY: 'client-id',
  SHOPIFY_API_SECRET: 'client-secret',
  SHOPIFY_APP_URL: 'https://connector.example.com',
  SERVICE_BASE_URL: 'https://service.example.com',
  ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
};

describe('loadConfig', () => {
  it('gives sandbox defaults for every Shopify and service variable with SANDBOX=1', () => {
    const c = loadConfig(sandbox);
    expect(c.sandbox).toBe(true);
    expect(c.port).toBe(3000);
    expect(c.databaseUrl).toBe('file:./data/connector.db');
    expect(c.dbProvider).toBe('sqlite');
    expect(c.shopify.appUrl).toBe('http://localhost:3000');
    expect(c.service.webhookUrl).toBe(c.service.baseUrl);
    expect(c.encryption.key).toHaveLength(32);
    expect(c.shopify.scopes).toEqual(['read_orders', 'read_customers', 'read_checkouts', 'read_fulfillments', 'write_app_proxy']);
  });

  it('reads a complete production environment', () => {
    const c = loadConfig({
      ...prodEnv,
      DATABASE_URL: 'postgresql://u@db:5432/x',
      SERVICE_WEBHOOK_URL: 'https://hooks.example.com/',
      PORT: '8080',
    });
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
      expect(() => loadConfig(env)).toThrow(new RegExp(`^${name} is required$`));
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
    expect(() => loadConfig({ ...prodEnv, SHOPIFY_ADMIN_ORIGIN: 'http://127.0.0.1:9999' })).toThrow(
      /SHOPIFY_ADMIN_ORIGIN is for development and tests only/,
    );
    expect(loadConfig({ ...sandbox, SHOPIFY_ADMIN_ORIGIN: 'http://127.0.0.1:9999/' }).shopify.adminOrigin).toBe('http://127.0.0.1:9999');
    // staging and tests point it at a fake Shopify with every variable given, and no sandbox
    expect(loadConfig({ ...fullEnv, NODE_ENV: 'staging', SHOPIFY_ADMIN_ORIGIN: 'http://127.0.0.1:9999' }).shopify.adminOrigin).toBe(
      'http://127.0.0.1:9999',
    );
  });

  it('requires an https app URL in production', () => {
    expect(() => loadConfig({ ...prodEnv, SHOPIFY_APP_URL: 'http://plain.example.com' })).toThrow(/SHOPIFY_APP_URL is invalid/);
  });

  it('runs everything in one process by default, or the role ROLE names; WORKER_ENABLED was removed, with the way forward', () => {
    expect(loadConfig(sandbox)).toMatchObject({ role: 'all', webEnabled: true, workerEnabled: true });
    expect(loadConfig({ ...sandbox, ROLE: 'web' })).toMatchObject({ role: 'web', webEnabled: true, workerEnabled: false });
    expect(loadConfig({ ...sandbox, ROLE: 'worker' })).toMatchObject({ role: 'worker', webEnabled: false, workerEnabled: true });
    expect(() => loadConfig({ ...sandbox, ROLE: 'both' })).toThrow(/^ROLE is invalid/);
    expect(() => loadConfig({ ...sandbox, WORKER_ENABLED: 'false' })).toThrow(/^WORKER_ENABLED was removed: set ROLE=web/);
  });

  it('takes the scopes as SHOPIFY_SCOPES or as SCOPES (the name Shopify’s CLI uses), the toml’s by default', () => {
    expect(loadConfig(sandbox).shopify.scopes).toEqual(DEFAULT_SCOPES.split(','));
    expect(loadConfig({ ...sandbox, SCOPES: 'read_orders,read_products' }).shopify.scopes).toEqual(['read_orders', 'read_products']);
    expect(loadConfig({ ...sandbox, SHOPIFY_SCOPES: 'read_orders' }).shopify.scopes).toEqual(['read_orders']);
    expect(() => loadConfig({ ...sandbox, SHOPIFY_SCOPES: 'read_orders', SCOPES: 'read_products' })).toThrow(/^SCOPES is invalid/);
  });

  it('takes a code constant by default; a deprecated variable still applies, and is named for the start-up log', () => {
    const c = loadConfig(sandbox);
    expect(c.deprecated).toEqual([]);
    expect(c.worker.maxInFlight).toBe(DEFAULT_TUNING.maxInFlight);
    expect(c.service.rateGuardMs).toBe(DEFAULT_GUARD_MS);
    expect(c.pixel).toMatchObject({ ratePerIp: PIXEL_RATES.perIp, lookupsPerMinute: STOREFRONT_LOOKUPS_PER_MINUTE });
    const old = loadConfig({ ...sandbox, SERVICE_RATE_GUARD_MS: '100', PIXEL_RATE_PER_IP: '5' });
    expect(old.service.rateGuardMs).toBe(100);
    expect(old.pixel.ratePerIp).toBe(5);
    expect(old.deprecated).toEqual([
      { variable: 'SERVICE_RATE_GUARD_MS', replacedBy: 'DEFAULT_GUARD_MS in src/outbox/pacer.ts' },
      { variable: 'PIXEL_RATE_PER_IP', replacedBy: 'PIXEL_RATES in src/http/pixel.route.ts' },
    ]);
  });

  it('makes the old storefront variables the defaults of the merchant’s settings they became', () => {
    expect(loadConfig(sandbox).settingsDefaults).toEqual(DEFAULT_SETTINGS);
    const c = loadConfig({ ...sandbox, PIXEL_BROWSE_DELAY_MINUTES: '30', PIXEL_ABANDONMENTS_PER_EMAIL_DAY: '2' });
    expect(c.settingsDefaults).toMatchObject({
      browse_abandonment_delay_minutes: 30,
      cart_abandonment_delay_minutes: 60,
      storefront_abandonments_per_email_day: 2,
    });
    expect(c.deprecated.map((d) => d.variable)).toEqual(['PIXEL_BROWSE_DELAY_MINUTES', 'PIXEL_ABANDONMENTS_PER_EMAIL_DAY']);
    expect(() => loadConfig({ ...sandbox, PIXEL_CART_DELAY_MINUTES: '0' })).toThrow(/^PIXEL_CART_DELAY_MINUTES is invalid/);
  });

  it('keeps the ranges the old storefront variables had, so a deployment that set them still starts', () => {
    const c = loadConfig({ ...sandbox, PIXEL_CART_DELAY_MINUTES: '1', PIXEL_EVENTS_PER_EMAIL_DAY: '10000000' });
    expect(c.settingsDefaults).toMatchObject({ cart_abandonment_delay_minutes: 1, storefront_events_per_email_day: 10_000_000 });
    expect(() => loadConfig({ ...sandbox, PIXEL_EVENTS_PER_EMAIL_DAY: '10000001' })).toThrow(/^PIXEL_EVENTS_PER_EMAIL_DAY is invalid/);
  });

  it('reads the delivery, checkout and retention settings, with their defaults', () => {
    expect(loadConfig(sandbox)).toMatchObject({
      databasePoolSize: 10,
      worker: { lanes: 32, maxSendsPerMessage: 8 },
      checkouts: { graceMinutes: 10, maxAgeDays: 7 },
      receiptRetentionDays: 7,
    });
    expect(loadConfig({ ...sandbox, DATABASE_POOL_SIZE: '24' }).databasePoolSize).toBe(24);
    expect(() => loadConfig({ ...sandbox, DATABASE_POOL_SIZE: '0' })).toThrow(/^DATABASE_POOL_SIZE is invalid/);
    const c = loadConfig({
      ...sandbox,
      WORKER_LANES: '200',
      MAX_SENDS_PER_MESSAGE: '3',
      CHECKOUT_GRACE_MINUTES: '0',
      CHECKOUT_MAX_AGE_DAYS: '30',
      RECEIPT_RETENTION_DAYS: '14',
    });
    expect(c).toMatchObject({
      worker: { lanes: 200, maxSendsPerMessage: 3 },
      checkouts: { graceMinutes: 0, maxAgeDays: 30 },
      receiptRetentionDays: 14,
    });
    expect(() => loadConfig({ ...sandbox, WORKER_LANES: '0' })).toThrow(/^WORKER_LANES is invalid/);
  });

  it('reads the delivery classes: floors in percent, maximum ages in hours (0: none)', () => {
    expect(loadConfig(sandbox).classes).toEqual({
      floors: { critical: 0, triggers: 0.15, behaviour: 0.1, history: 0.05 },
      maxAgeMs: { critical: null, triggers: 86_400_000, behaviour: 86_400_000, history: null },
    });
    const c = loadConfig({
      ...sandbox,
      DELIVERY_FLOOR_BEHAVIOUR: '20',
      DELIVERY_MAX_AGE_HOURS_BEHAVIOUR: '2',
      DELIVERY_MAX_AGE_HOURS_TRIGGERS: '0',
    });
    expect(c.classes).toMatchObject({ floors: { behaviour: 0.2 }, maxAgeMs: { behaviour: 7_200_000, triggers: null } });
    expect(() =>
      loadConfig({ ...sandbox, DELIVERY_FLOOR_TRIGGERS: '30', DELIVERY_FLOOR_BEHAVIOUR: '30', DELIVERY_FLOOR_HISTORY: '10' }),
    ).toThrow(/^DELIVERY_FLOOR_TRIGGERS is invalid: the three floors together/);
    expect(() => loadConfig({ ...sandbox, DELIVERY_FLOOR_HISTORY: '-1' })).toThrow(/^DELIVERY_FLOOR_HISTORY is invalid/);
  });
});

describe('the sandbox, only on request', () => {
  it.each([[undefined], ['development'], ['test'], ['staging']])(
    'with NODE_ENV=%s and no SANDBOX, a missing variable stops start-up with its one line, and no published value is used',
    (nodeEnv) => {
      for (const name of Object.keys(fullEnv)) {
        const env: Record<string, string | undefined> = { ...fullEnv, NODE_ENV: nodeEnv };
        delete env[name];
        expect(() => loadConfig(env)).toThrow(ConfigError);
        expect(() => loadConfig(env)).toThrow(new RegExp(`^${name} is required \\(set SANDBOX=1 for the sandbox defaults\\)$`));
      }
      expect(() => loadConfig({ NODE_ENV: nodeEnv })).toThrow(/^SHOPIFY_API_KEY is required/);
    },
  );

  it('with every variable given, starts without NODE_ENV=production, outside the sandbox', () => {
    const c = loadConfig({ ...fullEnv, NODE_ENV: 'staging' });
    expect(c).toMatchObject({ production: false, sandbox: false, shopify: { apiSecret: 'client-secret' } });
    expect(c.encryption.key.equals(Buffer.alloc(32, 7))).toBe(true);
    expect(loadConfig(fullEnv).sandbox).toBe(false);
  });

  it('SANDBOX=1 or true fills only what is missing; 0 or false is off; anything else is an error', () => {
    expect(loadConfig({ SANDBOX: 'true' }).sandbox).toBe(true);
    const mixed = loadConfig({ SANDBOX: '1', SHOPIFY_API_SECRET: 'mine' });
    expect(mixed.shopify.apiSecret).toBe('mine');
    expect(mixed.encryption.key.toString('base64')).toBe(SANDBOX_DEFAULTS.ENCRYPTION_KEY);
    expect(() => loadConfig({ SANDBOX: '0' })).toThrow(/^SHOPIFY_API_KEY is required/);
    expect(loadConfig({ ...fullEnv, SANDBOX: 'false' }).sandbox).toBe(false);
    expect(() => loadConfig({ SANDBOX: 'yes' })).toThrow(/^SANDBOX is invalid/);
  });

  it('refuses SANDBOX=1 with NODE_ENV=production, even with every variable given', () => {
    expect(() => loadConfig({ ...prodEnv, SANDBOX: '1' })).toThrow(
      /^SANDBOX is for development and tests only; unset it when NODE_ENV=production$/,
    );
  });

  it('npm run dev (loadDevConfig) asks for the sandbox, and refuses production settings with one line', () => {
    const c = loadDevConfig({ PORT: '0' });
    expect(c).toMatchObject({ sandbox: true, production: false });
    expect(c.shopify.apiSecret).toBe(SANDBOX_DEFAULTS.SHOPIFY_API_SECRET);
    // the published values given explicitly are still the sandbox
    expect(loadDevConfig({ ...SANDBOX_DEFAULTS }).sandbox).toBe(true);
    expect(() => loadDevConfig({ NODE_ENV: 'production' })).toThrow(/^npm run dev is the sandbox and refuses NODE_ENV=production/);
    expect(() => loadDevConfig({ SHOPIFY_API_SECRET: 'a-real-secret' })).toThrow(/^SHOPIFY_API_SECRET is not the sandbox's/);
    expect(() => loadDevConfig({ ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64') })).toThrow(/^ENCRYPTION_KEY is not the sandbox's/);
    expect(() => loadDevConfig({ ENCRYPTION_KEYS_PREVIOUS: Buffer.alloc(32, 9).toString('base64') })).toThrow(
      /^ENCRYPTION_KEYS_PREVIOUS is set/,
    );
    // the refusal names the variable, never its value
    try {
      loadDevConfig({ SHOPIFY_API_SECRET: 'a-real-secret' });
    } catch (err) {
      expect((err as Error).message).not.toContain('a-real-secret');
    }
  });

  it('db:migrate (loadDatabaseConfig) needs DATABASE_URL alone, and no secret', () => {
    expect(loadDatabaseConfig({})).toEqual({ databaseUrl: 'file:./data/connector.db', dbProvider: 'sqlite' });
    expect(loadDatabaseConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgresql://u@db/x' })).toEqual({
      databaseUrl: 'postgresql://u@db/x',
      dbProvider: 'postgres',
    });
    expect(() => loadDatabaseConfig({ DATABASE_URL: 'mysql://x' })).toThrow(/^DATABASE_URL is invalid/);
  });
});

describe('operations routes and HTTP limits', () => {
  it('serves the operations routes on the public port, without a token, unless told otherwise', () => {
    expect(loadConfig(fullEnv).ops).toEqual({ port: undefined, host: '0.0.0.0', metricsToken: undefined });
  });

  it('reads OPS_PORT, OPS_HOST and METRICS_TOKEN', () => {
    const c = loadConfig({ ...fullEnv, PORT: '8080', OPS_PORT: '9090', OPS_HOST: '10.0.0.5', METRICS_TOKEN: 'a-long-enough-token-123' });
    expect(c.ops).toEqual({ port: 9090, host: '10.0.0.5', metricsToken: 'a-long-enough-token-123' });
    expect(() => loadConfig({ ...fullEnv, PORT: '8080', OPS_PORT: '8080' })).toThrow(/^OPS_PORT is invalid: it must differ from PORT$/);
    expect(() => loadConfig({ ...fullEnv, OPS_PORT: 'ops' })).toThrow(/^OPS_PORT is invalid/);
    expect(() => loadConfig({ ...fullEnv, METRICS_TOKEN: 'short' })).toThrow(/^METRICS_TOKEN is invalid/);
    expect(() => loadConfig({ ...fullEnv, METRICS_TOKEN: 'has a space in it, long enough' })).toThrow(/^METRICS_TOKEN is invalid/);
  });

  it('sets the HTTP timeouts, 10 s for headers, 30 s for a request and 65 s for an idle connection by default', () => {
    expect(loadConfig(fullEnv).http).toEqual({ headersMs: 10_000, requestMs: 30_000, keepAliveMs: 65_000 });
    const c = loadConfig({
      ...fullEnv,
      HTTP_HEADERS_TIMEOUT_MS: '5000',
      HTTP_REQUEST_TIMEOUT_MS: '60000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '75000',
    });
    expect(c.http).toEqual({ headersMs: 5000, requestMs: 60_000, keepAliveMs: 75_000 });
    expect(() => loadConfig({ ...fullEnv, HTTP_HEADERS_TIMEOUT_MS: '40000' })).toThrow(
      /^HTTP_HEADERS_TIMEOUT_MS is invalid: it must not exceed HTTP_REQUEST_TIMEOUT_MS$/,
    );
    expect(() => loadConfig({ ...fullEnv, HTTP_REQUEST_TIMEOUT_MS: '10' })).toThrow(/^HTTP_REQUEST_TIMEOUT_MS is invalid/);
  });
});
