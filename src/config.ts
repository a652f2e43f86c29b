// The only reader of process.env. Turns the environment into a typed Config, or stops start-up
// with one line naming the variable at fault (section 1 of the app contract).
import { z } from 'zod';
import { DEFAULT_HTTP_TIMEOUTS, type HttpTimeouts } from './http/app';
import { PIXEL_RATES } from './http/pixel.route';
import { STOREFRONT_LOOKUPS_PER_MINUTE } from './integrations/shopify/products';
import { DEFAULT_ABANDONMENT } from './mapping/types';
import { NOTIFY_ME_KEEP_DAYS, NOTIFY_ME_PER_EMAIL_HOUR, NOTIFY_ME_PER_IP_MINUTE } from './notify-me/use-case';
import { DEFAULT_CLASS_POLICY, type ClassPolicy } from './outbox/classes';
import { DEFAULT_TUNING } from './outbox/delivery/tuning';
import { DEFAULT_GUARD_MS } from './outbox/pacer';
import { DEFAULT_MAX_SENDS } from './outbox/repository';
import { PENDING_IDENTITY_MS } from './processing/storefront/pending-identities';
import { WAITING_EVENT_MS } from './processing/storefront/queues';
import { DEFAULT_SETTINGS, mergeSettings, type Settings } from './settings/settings';

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

/**
 * Variables that are no longer the operator's: a constant beside its code (listed with its file in
 * docs/operations.md), or the merchant's per-shop setting on the admin page. Each still applies
 * when set, for compatibility, and start-up logs once that it is deprecated, naming what replaced it.
 */
export const DEPRECATED_VARIABLES = {
  HTTP_HEADERS_TIMEOUT_MS: 'DEFAULT_HTTP_TIMEOUTS in src/http/app.ts',
  HTTP_REQUEST_TIMEOUT_MS: 'DEFAULT_HTTP_TIMEOUTS in src/http/app.ts',
  SERVICE_RATE_GUARD_MS: 'DEFAULT_GUARD_MS in src/outbox/pacer.ts',
  WORKER_MAX_IN_FLIGHT: 'DEFAULT_TUNING.maxInFlight in src/outbox/delivery/tuning.ts',
  MAX_SENDS_PER_MESSAGE: 'DEFAULT_MAX_SENDS in src/outbox/repository.ts',
  DELIVERY_FLOOR_TRIGGERS: 'DEFAULT_CLASS_POLICY in src/outbox/classes.ts',
  DELIVERY_FLOOR_BEHAVIOUR: 'DEFAULT_CLASS_POLICY in src/outbox/classes.ts',
  DELIVERY_FLOOR_HISTORY: 'DEFAULT_CLASS_POLICY in src/outbox/classes.ts',
  DELIVERY_MAX_AGE_HOURS_CRITICAL: 'DEFAULT_CLASS_POLICY in src/outbox/classes.ts',
  DELIVERY_MAX_AGE_HOURS_TRIGGERS: 'DEFAULT_CLASS_POLICY in src/outbox/classes.ts',
  DELIVERY_MAX_AGE_HOURS_BEHAVIOUR: 'DEFAULT_CLASS_POLICY in src/outbox/classes.ts',
  DELIVERY_MAX_AGE_HOURS_HISTORY: 'DEFAULT_CLASS_POLICY in src/outbox/classes.ts',
  CHECKOUT_GRACE_MINUTES: 'DEFAULT_ABANDONMENT in src/mapping/types.ts',
  CHECKOUT_MAX_AGE_DAYS: 'DEFAULT_ABANDONMENT in src/mapping/types.ts',
  PIXEL_ANONYMOUS_HOURS: 'WAITING_EVENT_MS in src/processing/storefront/queues.ts',
  PIXEL_CLAIM_MINUTES: 'PENDING_IDENTITY_MS in src/processing/storefront/pending-identities.ts',
  PIXEL_RATE_PER_CLIENT: 'PIXEL_RATES in src/http/pixel.route.ts',
  PIXEL_RATE_PER_IP: 'PIXEL_RATES in src/http/pixel.route.ts',
  PIXEL_RATE_PER_SHOP: 'PIXEL_RATES in src/http/pixel.route.ts',
  PIXEL_LOOKUPS_PER_MINUTE: 'STOREFRONT_LOOKUPS_PER_MINUTE in src/integrations/shopify/products.ts',
  NOTIFY_ME_DAYS: 'NOTIFY_ME_KEEP_DAYS in src/notify-me/use-case.ts',
  NOTIFY_ME_PER_IP_MINUTE: 'NOTIFY_ME_PER_IP_MINUTE in src/notify-me/use-case.ts',
  NOTIFY_ME_PER_EMAIL_HOUR: 'NOTIFY_ME_PER_EMAIL_HOUR in src/notify-me/use-case.ts',
  PIXEL_BROWSE_DELAY_MINUTES: "the shop's setting browse_abandonment_delay_minutes (admin page, Events)",
  PIXEL_CART_DELAY_MINUTES: "the shop's setting cart_abandonment_delay_minutes (admin page, Events)",
  PIXEL_EVENTS_PER_EMAIL_DAY: "the shop's setting storefront_events_per_email_day (admin page, Events)",
  PIXEL_ABANDONMENTS_PER_EMAIL_DAY: "the shop's setting storefront_abandonments_per_email_day (admin page, Events)",
} as const;

export type DeprecatedVariable = keyof typeof DEPRECATED_VARIABLES;

/**
 * A deprecated variable that sets the default of a merchant's setting keeps the range it had as a
 * variable, so a deployment that set it still starts (the pixel benchmark sets 10,000,000). The
 * merchant's own choice on the admin page is held to the setting's range (SETTING_LIMITS).
 */
const legacyDefault = (max: number) => z.coerce.number().int().min(1).max(max).optional();

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
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).optional(),
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).optional(),
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
    .optional(),
  // the name Shopify's CLI and app template give the scopes
  SCOPES: z
    .string()
    .regex(/^[a-z_]+(,[a-z_]+)*$/, 'SCOPES must be comma-separated scopes')
    .optional(),
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
  SERVICE_RATE_GUARD_MS: z.coerce.number().int().min(0).max(500).optional(),
  ROLE: z.enum(['all', 'web', 'worker']).default('all'),
  // PostgreSQL connections per process: intake, stage 2 and every delivery lane share them
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(500).default(10),
  WORKER_LANES: z.coerce.number().int().min(1).max(1000).default(DEFAULT_TUNING.lanes),
  WORKER_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(1000).optional(),
  MAX_SENDS_PER_MESSAGE: z.coerce.number().int().min(1).max(100).optional(),
  CHECKOUT_GRACE_MINUTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(24 * 60)
    .optional(),
  CHECKOUT_MAX_AGE_DAYS: z.coerce.number().int().min(1).max(365).optional(),
  // processed receipts keep their webhook id (the dedupe) this long, then are deleted
  RECEIPT_RETENTION_DAYS: z.coerce.number().int().min(1).max(90).default(7),
  // how long a storefront visitor stays tied to the vouched email it gave, after it was last seen
  PIXEL_IDENTITY_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  // proxy hops (load balancer, CDN) whose X-Forwarded-For entries are believed for a client's address
  TRUST_PROXY: z.coerce.number().int().min(0).max(10).default(0),
  // deprecated (DEPRECATED_VARIABLES): constants beside their code, or the merchant's settings
  PIXEL_ANONYMOUS_HOURS: z.coerce.number().positive().max(24).optional(),
  PIXEL_BROWSE_DELAY_MINUTES: legacyDefault(7 * 24 * 60),
  PIXEL_CART_DELAY_MINUTES: legacyDefault(7 * 24 * 60),
  PIXEL_RATE_PER_SHOP: z.coerce.number().positive().max(1_000_000).optional(),
  PIXEL_RATE_PER_CLIENT: z.coerce.number().positive().max(10_000).optional(),
  PIXEL_RATE_PER_IP: z.coerce.number().positive().max(1_000_000).optional(),
  PIXEL_CLAIM_MINUTES: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 60)
    .optional(),
  PIXEL_EVENTS_PER_EMAIL_DAY: legacyDefault(10_000_000),
  PIXEL_ABANDONMENTS_PER_EMAIL_DAY: legacyDefault(10_000_000),
  PIXEL_LOOKUPS_PER_MINUTE: z.coerce.number().int().min(0).max(10_000).optional(),
  NOTIFY_ME_DAYS: z.coerce.number().int().min(1).max(365).optional(),
  NOTIFY_ME_PER_IP_MINUTE: z.coerce.number().positive().max(10_000).optional(),
  NOTIFY_ME_PER_EMAIL_HOUR: z.coerce.number().positive().max(10_000).optional(),
  DELIVERY_FLOOR_TRIGGERS: z.coerce.number().min(0).max(50).optional(),
  DELIVERY_FLOOR_BEHAVIOUR: z.coerce.number().min(0).max(50).optional(),
  DELIVERY_FLOOR_HISTORY: z.coerce.number().min(0).max(50).optional(),
  DELIVERY_MAX_AGE_HOURS_CRITICAL: z.coerce
    .number()
    .min(0)
    .max(24 * 365)
    .optional(),
  DELIVERY_MAX_AGE_HOURS_TRIGGERS: z.coerce
    .number()
    .min(0)
    .max(24 * 365)
    .optional(),
  DELIVERY_MAX_AGE_HOURS_BEHAVIOUR: z.coerce
    .number()
    .min(0)
    .max(24 * 365)
    .optional(),
  DELIVERY_MAX_AGE_HOURS_HISTORY: z.coerce
    .number()
    .min(0)
    .max(24 * 365)
    .optional(),
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
  /** The storefront pixel: retention of waiting events and of identities, requests per second, trust. */
  pixel: {
    anonymousHours: number;
    identityDays: number;
    ratePerShop: number;
    ratePerClient: number;
    /** Trust: per-IP rate, proxy hops trusted in X-Forwarded-For, pending-identity window, Admin API calls per shop and minute. */
    ratePerIp: number;
    trustProxyHops: number;
    claimMinutes: number;
    lookupsPerMinute: number;
  };
  /** The storefront's notify-me form: days a subscription is kept, requests per minute per address, per hour per email. */
  notifyMe: { keepDays: number; perIpPerMinute: number; perEmailPerHour: number };
  /**
   * What a shop's settings are until its merchant changes them: DEFAULT_SETTINGS, with what the
   * deprecated variables of merchant settings say (PIXEL_BROWSE_DELAY_MINUTES, ...) when set.
   */
  settingsDefaults: Settings;
  /** The deprecated variables set, with what replaced each: start-up logs each once. */
  deprecated: Array<{ variable: DeprecatedVariable; replacedBy: string }>;
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
  if (raw.WORKER_ENABLED !== undefined)
    throw new ConfigError('WORKER_ENABLED was removed: set ROLE=web (for WORKER_ENABLED=false), or leave ROLE unset to run everything');
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
  if ((e.HTTP_HEADERS_TIMEOUT_MS ?? DEFAULT_HTTP_TIMEOUTS.headersMs) > (e.HTTP_REQUEST_TIMEOUT_MS ?? DEFAULT_HTTP_TIMEOUTS.requestMs)) {
    throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS is invalid: it must not exceed HTTP_REQUEST_TIMEOUT_MS');
  }
  if (production && e.SHOPIFY_ADMIN_ORIGIN) {
    throw new ConfigError('SHOPIFY_ADMIN_ORIGIN is for development and tests only; unset it when NODE_ENV=production');
  }
  if (production && !e.SHOPIFY_APP_URL.startsWith('https://')) {
    throw new ConfigError('SHOPIFY_APP_URL is invalid: it must be https when NODE_ENV=production');
  }
  const floors = DEFAULT_CLASS_POLICY.floors;
  const floor = (v: number | undefined, d: number) => (v === undefined ? d : v / 100);
  const classFloors = {
    critical: 0,
    triggers: floor(e.DELIVERY_FLOOR_TRIGGERS, floors.triggers),
    behaviour: floor(e.DELIVERY_FLOOR_BEHAVIOUR, floors.behaviour),
    history: floor(e.DELIVERY_FLOOR_HISTORY, floors.history),
  };
  if (classFloors.triggers + classFloors.behaviour + classFloors.history > 0.6 + 1e-9) {
    throw new ConfigError('DELIVERY_FLOOR_TRIGGERS is invalid: the three floors together must leave at least 40% to the highest class');
  }
  if (e.SHOPIFY_SCOPES && e.SCOPES && e.SHOPIFY_SCOPES !== e.SCOPES)
    throw new ConfigError('SCOPES is invalid: it differs from SHOPIFY_SCOPES; set one of them');
  const role: Role = e.ROLE;
  const maxAge = (v: number | undefined, d: number | null) => (v === undefined ? d : hoursOrNone(v));
  const ages = DEFAULT_CLASS_POLICY.maxAgeMs;
  return {
    production,
    sandbox,
    port: e.PORT,
    ops: { port: e.OPS_PORT, host: e.OPS_HOST, metricsToken: e.METRICS_TOKEN },
    http: {
      headersMs: e.HTTP_HEADERS_TIMEOUT_MS ?? DEFAULT_HTTP_TIMEOUTS.headersMs,
      requestMs: e.HTTP_REQUEST_TIMEOUT_MS ?? DEFAULT_HTTP_TIMEOUTS.requestMs,
      keepAliveMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    },
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    dbProvider: /^postgres(ql)?:\/\//.test(e.DATABASE_URL) ? 'postgres' : 'sqlite',
    shopify: {
      apiKey: e.SHOPIFY_API_KEY,
      apiSecret: e.SHOPIFY_API_SECRET,
      appUrl: e.SHOPIFY_APP_URL.replace(/\/$/, ''),
      scopes: (e.SHOPIFY_SCOPES ?? e.SCOPES ?? DEFAULT_SCOPES).split(','),
      adminOrigin: e.SHOPIFY_ADMIN_ORIGIN?.replace(/\/$/, ''),
    },
    service: {
      baseUrl: e.SERVICE_BASE_URL.replace(/\/$/, ''),
      webhookUrl: (e.SERVICE_WEBHOOK_URL ?? e.SERVICE_BASE_URL).replace(/\/$/, ''),
      timeoutMs: e.SERVICE_TIMEOUT_MS,
      rateGuardMs: e.SERVICE_RATE_GUARD_MS ?? DEFAULT_GUARD_MS,
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
    worker: {
      lanes: e.WORKER_LANES,
      maxInFlight: e.WORKER_MAX_IN_FLIGHT ?? DEFAULT_TUNING.maxInFlight,
      maxSendsPerMessage: e.MAX_SENDS_PER_MESSAGE ?? DEFAULT_MAX_SENDS,
    },
    classes: {
      floors: classFloors,
      maxAgeMs: {
        critical: maxAge(e.DELIVERY_MAX_AGE_HOURS_CRITICAL, ages.critical),
        triggers: maxAge(e.DELIVERY_MAX_AGE_HOURS_TRIGGERS, ages.triggers),
        behaviour: maxAge(e.DELIVERY_MAX_AGE_HOURS_BEHAVIOUR, ages.behaviour),
        history: maxAge(e.DELIVERY_MAX_AGE_HOURS_HISTORY, ages.history),
      },
    },
    checkouts: {
      graceMinutes: e.CHECKOUT_GRACE_MINUTES ?? DEFAULT_ABANDONMENT.graceMs / 60_000,
      maxAgeDays: e.CHECKOUT_MAX_AGE_DAYS ?? DEFAULT_ABANDONMENT.maxAgeMs / 86_400_000,
    },
    receiptRetentionDays: e.RECEIPT_RETENTION_DAYS,
    pixel: {
      anonymousHours: e.PIXEL_ANONYMOUS_HOURS ?? WAITING_EVENT_MS / 3_600_000,
      identityDays: e.PIXEL_IDENTITY_DAYS,
      ratePerShop: e.PIXEL_RATE_PER_SHOP ?? PIXEL_RATES.perShop,
      ratePerClient: e.PIXEL_RATE_PER_CLIENT ?? PIXEL_RATES.perClient,
      ratePerIp: e.PIXEL_RATE_PER_IP ?? PIXEL_RATES.perIp,
      trustProxyHops: e.TRUST_PROXY,
      claimMinutes: e.PIXEL_CLAIM_MINUTES ?? PENDING_IDENTITY_MS / 60_000,
      lookupsPerMinute: e.PIXEL_LOOKUPS_PER_MINUTE ?? STOREFRONT_LOOKUPS_PER_MINUTE,
    },
    notifyMe: {
      keepDays: e.NOTIFY_ME_DAYS ?? NOTIFY_ME_KEEP_DAYS,
      perIpPerMinute: e.NOTIFY_ME_PER_IP_MINUTE ?? NOTIFY_ME_PER_IP_MINUTE,
      perEmailPerHour: e.NOTIFY_ME_PER_EMAIL_HOUR ?? NOTIFY_ME_PER_EMAIL_HOUR,
    },
    settingsDefaults: mergeSettings(DEFAULT_SETTINGS, {
      browse_abandonment_delay_minutes: e.PIXEL_BROWSE_DELAY_MINUTES,
      cart_abandonment_delay_minutes: e.PIXEL_CART_DELAY_MINUTES,
      storefront_events_per_email_day: e.PIXEL_EVENTS_PER_EMAIL_DAY,
      storefront_abandonments_per_email_day: e.PIXEL_ABANDONMENTS_PER_EMAIL_DAY,
    }),
    deprecated: (Object.keys(DEPRECATED_VARIABLES) as DeprecatedVariable[])
      .filter((v) => raw[v] !== undefined)
      .map((variable) => ({ variable, replacedBy: DEPRECATED_VARIABLES[variable] })),
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
