// The only reader of process.env. Turns the environment into a typed Config, or stops start-up
// with one line naming the variable at fault (section 1 of the app contract).
import { z } from 'zod';
import { DEFAULT_HTTP_TIMEOUTS, type HttpTimeouts } from './http/app';
import type { ClassPolicy } from './outbox/classes';
import { DEFAULT_TUNING } from './outbox/delivery/tuning';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

// Fixed, public sandbox values: used only when the sandbox is asked for (SANDBOX=1, or
// `npm run dev`), and never with NODE_ENV=production. Anyone can read them, so nothing real may be
// stored under them.
export const SANDBOX_DEFAULTS = {
  SHOPIFY_API_KEY: 'sandbox-client-id',
  SHOPIFY_API_SECRET: 'sandbox-client-secret',
  SERVICE_BASE_URL: 'http://127.0.0.1:4010',
  // 32 bytes, base64; not secret, because sandbox data is not real
  ENCRYPTION_KEY: Buffer.alloc(32, 's').toString('base64'),
} as const;

// write_app_proxy: the storefront's notify-me form posts through the app proxy ([app_proxy] in shopify.app.toml)
export const DEFAULT_SCOPES = 'read_orders,read_customers,read_checkouts,read_fulfillments,write_app_proxy';

/** The HTTP servers' limits on a client unless HTTP_*_TIMEOUT_MS say otherwise (see createHttpServer). */

const url = (name: string) =>
  z.string().refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === 'http:' || u.protocol === 'https:';
    } catch {
      return false;
    }
  }, `${name} must be an http(s) URL`);

const encryptionKey = z.string().refine((v) => Buffer.from(v, 'base64').length === 32, 'ENCRYPTION_KEY must be 32 bytes, base64-encoded');

const port = z.coerce.number().int().min(0).max(65535);
const flag = (name: string) => z.enum(['1', 'true', '0', 'false'], { error: `${name} must be 1 or true (0 or false: off)` });

const schema = z.object({
  NODE_ENV: z.string().optional(),
  // the published sandbox values fill what is missing: only where a person asks for them
  SANDBOX: flag('SANDBOX').optional(),
  PORT: port.default(3000),
  // the operations routes (/healthz, /readyz, /metrics) on a port of their own, off the public one
  OPS_PORT: port.optional(),
  OPS_HOST: z.string().min(1).default('0.0.0.0'),
  // when set, /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`
  METRICS_TOKEN: z
    .string()
    .regex(/^[\x21-\x7e]{16,}$/, 'METRICS_TOKEN must be at least 16 printable characters, without spaces')
    .optional(),
  // the HTTP servers' limits on a client: its headers, its whole request, an idle kept-alive connection
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(DEFAULT_HTTP_TIMEOUTS.headersMs),
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(DEFAULT_HTTP_TIMEOUTS.requestMs),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(DEFAULT_HTTP_TIMEOUTS.keepAliveMs),
  DATABASE_URL: z
    .string()
    .regex(/^(file:|postgres(ql)?:\/\/)/, 'DATABASE_URL must start with file:, postgres:// or postgresql://')
    .default('file:./data/connector.db'),
  SHOPIFY_API_KEY: z.string().min(1),
  SHOPIFY_API_SECRET: z.string().min(1),
  SHOPIFY_APP_URL: url('SHOPIFY_APP_URL'),
  SHOPIFY_SCOPES: z
    .string()
    .regex(/^[a-z_]+(,[a-z_]+)*$/, 'SHOPIFY_SCOPES must be comma-separated scopes')
    .default(DEFAULT_SCOPES),
  SERVICE_BASE_URL: url('SERVICE_BASE_URL'),
  SERVICE_WEBHOOK_URL: url('SERVICE_WEBHOOK_URL').optional(),
  ENCRYPTION_KEY: encryptionKey,
  // Keys that may still decrypt older rows during rotation, comma-separated base64.
  ENCRYPTION_KEYS_PREVIOUS: z
    .string()
    .refine(
      (v) => v.split(',').every((k) => Buffer.from(k.trim(), 'base64').length === 32),
      'ENCRYPTION_KEYS_PREVIOUS must be 32-byte base64 keys, comma-separated',
    )
    .optional(),
  SHOPIFY_ADMIN_ORIGIN: url('SHOPIFY_ADMIN_ORIGIN').optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  SERVICE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120000).default(10000),
  // the pacer's room, per second of sends, for jitter between a request leaving and the service counting it
  SERVICE_RATE_GUARD_MS: z.coerce.number().int().min(0).max(500).default(40),
  // deprecated alias of ROLE=web (false) / ROLE=all (true)
  WORKER_ENABLED: z.enum(['true', 'false']).optional(),
  ROLE: z.enum(['all', 'web', 'worker']).optional(),
  // PostgreSQL connections per process: intake, stage 2 and every delivery lane share them
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(500).default(10),
  WORKER_LANES: z.coerce.number().int().min(1).max(1000).default(DEFAULT_TUNING.lanes),
  WORKER_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(1000).default(DEFAULT_TUNING.maxInFlight),
  MAX_SENDS_PER_MESSAGE: z.coerce.number().int().min(1).max(100).default(8),
  CHECKOUT_GRACE_MINUTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(24 * 60)
    .default(10),
  CHECKOUT_MAX_AGE_DAYS: z.coerce.number().int().min(1).max(365).default(7),
  // processed receipts keep their webhook id (the dedupe) this long, then are deleted
  RECEIPT_RETENTION_DAYS: z.coerce.number().int().min(1).max(90).default(7),
  // storefront pixel (src/processing/storefront): how long an anonymous visitor's events wait for an email, how
  // long a client id stays tied to the email it gave, the abandonment delays, the rate limits
  PIXEL_ANONYMOUS_HOURS: z.coerce.number().positive().max(24).default(24),
  PIXEL_IDENTITY_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  PIXEL_BROWSE_DELAY_MINUTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 60)
    .default(60),
  PIXEL_CART_DELAY_MINUTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 60)
    .default(60),
  PIXEL_RATE_PER_SHOP: z.coerce.number().positive().max(1_000_000).default(1000),
  PIXEL_RATE_PER_CLIENT: z.coerce.number().positive().max(10_000).default(2),
  // storefront trust (src/processing/storefront/trust.ts): requests per second per client IP (from the socket, or
  // X-Forwarded-For past TRUST_PROXY proxy hops), how long a claim to an email waits for Shopify to
  // vouch for it, each email's daily limits, Admin API calls per shop and minute for storefront events
  PIXEL_RATE_PER_IP: z.coerce.number().positive().max(1_000_000).default(20),
  TRUST_PROXY: z.coerce.number().int().min(0).max(10).default(0),
  PIXEL_CLAIM_MINUTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 60)
    .default(30),
  PIXEL_EVENTS_PER_EMAIL_DAY: z.coerce.number().int().min(1).max(10_000_000).default(200),
  PIXEL_ABANDONMENTS_PER_EMAIL_DAY: z.coerce.number().int().min(1).max(10_000_000).default(4),
  PIXEL_LOOKUPS_PER_MINUTE: z.coerce.number().int().min(0).max(10_000).default(10),
  // the storefront's notify-me form (src/notify-me): how long a subscription is kept after its latest
  // subscribe, requests per minute per shopper address, requests per hour per email (and per customer)
  NOTIFY_ME_DAYS: z.coerce.number().int().min(1).max(365).default(90),
  NOTIFY_ME_PER_IP_MINUTE: z.coerce.number().positive().max(10_000).default(10),
  NOTIFY_ME_PER_EMAIL_HOUR: z.coerce.number().positive().max(10_000).default(10),
  // delivery classes (src/outbox/classes.ts): the floor share of each lower class, in percent of a
  // workspace's sends, and each class's maximum useful age past due, in hours (0: none)
  DELIVERY_FLOOR_TRIGGERS: z.coerce.number().min(0).max(50).default(15),
  DELIVERY_FLOOR_BEHAVIOUR: z.coerce.number().min(0).max(50).default(10),
  DELIVERY_FLOOR_HISTORY: z.coerce.number().min(0).max(50).default(5),
  DELIVERY_MAX_AGE_HOURS_CRITICAL: z.coerce
    .number()
    .min(0)
    .max(24 * 365)
    .default(0),
  DELIVERY_MAX_AGE_HOURS_TRIGGERS: z.coerce
    .number()
    .min(0)
    .max(24 * 365)
    .default(24),
  DELIVERY_MAX_AGE_HOURS_BEHAVIOUR: z.coerce
    .number()
    .min(0)
    .max(24 * 365)
    .default(24),
  DELIVERY_MAX_AGE_HOURS_HISTORY: z.coerce
    .number()
    .min(0)
    .max(24 * 365)
    .default(0),
});

/** A maximum age in hours as ms; 0 means none. */
const hoursOrNone = (h: number): number | null => (h > 0 ? Math.round(h * 3_600_000) : null);

/** What a process runs: web = HTTP (intake, admin API); worker = receipt processing and delivery; all = both. */
export type Role = 'all' | 'web' | 'worker';

export interface Config {
  production: boolean;
  /** The published sandbox values may fill missing variables: only with SANDBOX=1 or `npm run dev`. */
  sandbox: boolean;
  port: number;
  /** The operations routes: a port of their own (OPS_PORT) when set, and the bearer token /metrics requires. */
  ops: { port?: number; host: string; metricsToken?: string };
  /** Limits on a client of the HTTP servers, in milliseconds (see createHttpServer). */
  http: HttpTimeouts;
  databaseUrl: string;
  /** PostgreSQL connections per process (DATABASE_POOL_SIZE). */
  databasePoolSize: number;
  dbProvider: 'sqlite' | 'postgres';
  shopify: {
    apiKey: string;
    apiSecret: string;
    appUrl: string;
    scopes: string[];
    adminOrigin?: string;
  };
  service: { baseUrl: string; webhookUrl: string; timeoutMs: number; rateGuardMs: number };
  encryption: { key: Buffer; previousKeys: Buffer[] };
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  role: Role;
  /** Runs receipt processing and delivery (role all or worker). */
  workerEnabled: boolean;
  /** Runs the public HTTP surface: webhooks, pixel, admin API, page (role all or web). */
  webEnabled: boolean;
  worker: { lanes: number; maxInFlight: number; maxSendsPerMessage: number };
  /** Floors and maximum useful ages of the delivery classes. */
  classes: ClassPolicy;
  /** How long processed receipts are kept for deduplication. */
  receiptRetentionDays: number;
  checkouts: { graceMinutes: number; maxAgeDays: number };
  /** The storefront pixel: retention of anonymous events and of identities, abandonment delays, requests per second. */
  pixel: {
    anonymousHours: number;
    identityDays: number;
    browseDelayMinutes: number;
    cartDelayMinutes: number;
    ratePerShop: number;
    ratePerClient: number;
    /** Trust: per-IP rate, proxy hops trusted in X-Forwarded-For, claim window, per-email daily limits, Admin API calls per shop and minute. */
    ratePerIp: number;
    trustProxyHops: number;
    claimMinutes: number;
    eventsPerEmailDay: number;
    abandonmentsPerEmailDay: number;
    lookupsPerMinute: number;
  };
  /** The storefront's notify-me form: days a subscription is kept, requests per minute per address, per hour per email. */
  notifyMe: { keepDays: number; perIpPerMinute: number; perEmailPerHour: number };
}

type Env = Record<string, string | undefined>;

/** Empty strings count as unset, as most deploy tools write them for "no value". */
const present = (env: Env): Env => Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));

const isOn = (v: string | undefined) => v === '1' || v === 'true';

export function loadConfig(env: Env = process.env): Config {
  const production = env.NODE_ENV === 'production';
  const raw = present(env);
  const sandbox = isOn(raw.SANDBOX);
  if (sandbox && production) throw new ConfigError('SANDBOX is for development and tests only; unset it when NODE_ENV=production');
  if (sandbox) {
    for (const [k, v] of Object.entries(SANDBOX_DEFAULTS)) raw[k] ??= v;
    raw.SHOPIFY_APP_URL ??= `http://localhost:${raw.PORT ?? '3000'}`;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? 'environment');
    if (raw[name] !== undefined) throw new ConfigError(`${name} is invalid: ${issue.message}`);
    // only the variables with sandbox values can be missing; outside production the line says how to get them
    throw new ConfigError(`${name} is required${production ? '' : ' (set SANDBOX=1 for the sandbox defaults)'}`);
  }
  const e = parsed.data;
  if (e.OPS_PORT !== undefined && e.OPS_PORT !== 0 && e.OPS_PORT === e.PORT)
    throw new ConfigError('OPS_PORT is invalid: it must differ from PORT');
  if (e.HTTP_HEADERS_TIMEOUT_MS > e.HTTP_REQUEST_TIMEOUT_MS) {
    throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS is invalid: it must not exceed HTTP_REQUEST_TIMEOUT_MS');
  }
  if (production && e.SHOPIFY_ADMIN_ORIGIN) {
    throw new ConfigError('SHOPIFY_ADMIN_ORIGIN is for development and tests only; unset it when NODE_ENV=production');
  }
  if (production && !e.SHOPIFY_APP_URL.startsWith('https://')) {
    throw new ConfigError('SHOPIFY_APP_URL is invalid: it must be https when NODE_ENV=production');
  }
  if (e.DELIVERY_FLOOR_TRIGGERS + e.DELIVERY_FLOOR_BEHAVIOUR + e.DELIVERY_FLOOR_HISTORY > 60) {
    throw new ConfigError('DELIVERY_FLOOR_TRIGGERS is invalid: the three floors together must leave at least 40% to the highest class');
  }
  if (e.ROLE && e.WORKER_ENABLED) throw new ConfigError('WORKER_ENABLED is a deprecated alias of ROLE: set only ROLE');
  const role: Role = e.ROLE ?? (e.WORKER_ENABLED === 'false' ? 'web' : 'all');
  return {
    production,
    sandbox,
    port: e.PORT,
    ops: { port: e.OPS_PORT, host: e.OPS_HOST, metricsToken: e.METRICS_TOKEN },
    http: { headersMs: e.HTTP_HEADERS_TIMEOUT_MS, requestMs: e.HTTP_REQUEST_TIMEOUT_MS, keepAliveMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS },
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    dbProvider: /^postgres(ql)?:\/\//.test(e.DATABASE_URL) ? 'postgres' : 'sqlite',
    shopify: {
      apiKey: e.SHOPIFY_API_KEY,
      apiSecret: e.SHOPIFY_API_SECRET,
      appUrl: e.SHOPIFY_APP_URL.replace(/\/$/, ''),
      scopes: e.SHOPIFY_SCOPES.split(','),
      adminOrigin: e.SHOPIFY_ADMIN_ORIGIN?.replace(/\/$/, ''),
    },
    service: {
      baseUrl: e.SERVICE_BASE_URL.replace(/\/$/, ''),
      webhookUrl: (e.SERVICE_WEBHOOK_URL ?? e.SERVICE_BASE_URL).replace(/\/$/, ''),
      timeoutMs: e.SERVICE_TIMEOUT_MS,
      rateGuardMs: e.SERVICE_RATE_GUARD_MS,
    },
    encryption: {
      key: Buffer.from(e.ENCRYPTION_KEY, 'base64'),
      previousKeys: (e.ENCRYPTION_KEYS_PREVIOUS ?? '')
        .split(',')
        .filter(Boolean)
        .map((k) => Buffer.from(k.trim(), 'base64')),
    },
    logLevel: e.LOG_LEVEL,
    role,
    workerEnabled: role !== 'web',
    webEnabled: role !== 'worker',
    worker: { lanes: e.WORKER_LANES, maxInFlight: e.WORKER_MAX_IN_FLIGHT, maxSendsPerMessage: e.MAX_SENDS_PER_MESSAGE },
    classes: {
      floors: {
        critical: 0,
        triggers: e.DELIVERY_FLOOR_TRIGGERS / 100,
        behaviour: e.DELIVERY_FLOOR_BEHAVIOUR / 100,
        history: e.DELIVERY_FLOOR_HISTORY / 100,
      },
      maxAgeMs: {
        critical: hoursOrNone(e.DELIVERY_MAX_AGE_HOURS_CRITICAL),
        triggers: hoursOrNone(e.DELIVERY_MAX_AGE_HOURS_TRIGGERS),
        behaviour: hoursOrNone(e.DELIVERY_MAX_AGE_HOURS_BEHAVIOUR),
        history: hoursOrNone(e.DELIVERY_MAX_AGE_HOURS_HISTORY),
      },
    },
    checkouts: { graceMinutes: e.CHECKOUT_GRACE_MINUTES, maxAgeDays: e.CHECKOUT_MAX_AGE_DAYS },
    receiptRetentionDays: e.RECEIPT_RETENTION_DAYS,
    pixel: {
      anonymousHours: e.PIXEL_ANONYMOUS_HOURS,
      identityDays: e.PIXEL_IDENTITY_DAYS,
      browseDelayMinutes: e.PIXEL_BROWSE_DELAY_MINUTES,
      cartDelayMinutes: e.PIXEL_CART_DELAY_MINUTES,
      ratePerShop: e.PIXEL_RATE_PER_SHOP,
      ratePerClient: e.PIXEL_RATE_PER_CLIENT,
      ratePerIp: e.PIXEL_RATE_PER_IP,
      trustProxyHops: e.TRUST_PROXY,
      claimMinutes: e.PIXEL_CLAIM_MINUTES,
      eventsPerEmailDay: e.PIXEL_EVENTS_PER_EMAIL_DAY,
      abandonmentsPerEmailDay: e.PIXEL_ABANDONMENTS_PER_EMAIL_DAY,
      lookupsPerMinute: e.PIXEL_LOOKUPS_PER_MINUTE,
    },
    notifyMe: { keepDays: e.NOTIFY_ME_DAYS, perIpPerMinute: e.NOTIFY_ME_PER_IP_MINUTE, perEmailPerHour: e.NOTIFY_ME_PER_EMAIL_HOUR },
  };
}

/**
 * Only what `npm run db:migrate` needs: the database. A migration stores no secret, so it asks
 * for none.
 */
export function loadDatabaseConfig(env: Env = process.env): Pick<Config, 'databaseUrl' | 'dbProvider'> {
  const parsed = schema.shape.DATABASE_URL.safeParse(present(env).DATABASE_URL);
  if (!parsed.success) throw new ConfigError(`DATABASE_URL is invalid: ${parsed.error.issues[0]!.message}`);
  return { databaseUrl: parsed.data, dbProvider: /^postgres(ql)?:\/\//.test(parsed.data) ? 'postgres' : 'sqlite' };
}

/**
 * The configuration of `npm run dev`: the sandbox, with its published values. It refuses what
 * only a real deployment has (NODE_ENV=production, an app secret or encryption key of its own),
 * so real credentials are never stored under a published key, nor served by a process that mints
 * session tokens for any shop.
 */
export function loadDevConfig(env: Env = process.env): Config {
  const given = present(env);
  if (given.NODE_ENV === 'production')
    throw new ConfigError('npm run dev is the sandbox and refuses NODE_ENV=production; run the build with npm start');
  for (const name of ['SHOPIFY_API_SECRET', 'ENCRYPTION_KEY'] as const) {
    if (given[name] !== undefined && given[name] !== SANDBOX_DEFAULTS[name]) {
      throw new ConfigError(
        `${name} is not the sandbox's: npm run dev runs only on the published sandbox values; unset it, or run the build with npm start`,
      );
    }
  }
  if (given.ENCRYPTION_KEYS_PREVIOUS !== undefined) {
    throw new ConfigError(
      'ENCRYPTION_KEYS_PREVIOUS is set: npm run dev runs only on the published sandbox values; unset it, or run the build with npm start',
    );
  }
  return loadConfig({ ...env, SANDBOX: '1' });
}
