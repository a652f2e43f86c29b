// The @shopify/shopify-api instance, built from Config, plus SHOPIFY_ADMIN_ORIGIN support for
// development and tests. Everything that speaks Shopify goes through the object returned here.
import { currentLibraryFetch, setLibraryFetch } from './node-adapter';
import { ApiVersion, LogSeverity, shopifyApi, type Shopify } from '@shopify/shopify-api';
import type { Logger } from '../../observability/logger';
import { sanitizeShop } from './sanitize';

export const SHOPIFY_API_VERSION = ApiVersion.October26;

export type ShopifyApi = Shopify;

/** The settings the library is built from (the app's Config has them). */
export interface ShopifyApiConfig {
  production: boolean;
  shopify: { apiKey: string; apiSecret: string; appUrl: string; scopes: string[]; adminOrigin?: string };
}

export function createShopify(config: ShopifyApiConfig, logger: Logger): ShopifyApi {
  const appUrl = new URL(config.shopify.appUrl);
  const shopify = shopifyApi({
    apiKey: config.shopify.apiKey,
    apiSecretKey: config.shopify.apiSecret,
    scopes: config.shopify.scopes,
    hostName: appUrl.host,
    hostScheme: appUrl.protocol === 'http:' ? 'http' : 'https',
    apiVersion: SHOPIFY_API_VERSION,
    isEmbeddedApp: true,
    logger: {
      level: librarySeverity(logger.level),
      // Request logging would print URLs and bodies; our own logs say what matters.
      httpRequests: false,
      timestamps: false,
      log: libraryLogBridge(logger),
    },
  });
  if (config.shopify.adminOrigin && !config.production) {
    installAdminOriginFetch();
    originByApi.set(shopify, config.shopify.adminOrigin);
    defaultOrigin = config.shopify.adminOrigin;
  }
  return shopify;
}

// The library's info lines (future flags, "Creating new session") are chatter for us: they are
// logged at debug, so below debug only its warnings and errors pass.
function librarySeverity(level: string): LogSeverity {
  if (level === 'debug' || level === 'trace') return LogSeverity.Debug;
  if (level === 'error' || level === 'fatal' || level === 'silent') return LogSeverity.Error;
  return LogSeverity.Warning;
}

// Tokens look like shpat_…, shprt_…, JWTs, or `access_token=…`; none of them may reach a log line.
const SECRET_PATTERNS: Array<[RegExp, string]> = [
  [/\bshp[a-z]{2}_[A-Za-z0-9]+/g, '[redacted]'],
  [/\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/g, '[redacted]'],
  [
    /((?:access|refresh|subject)_?token|client_secret|stateFromCookie|[?&]code|[?&]state)(["']?\s*[:=]\s*["']?)[^\s"'&,}]+/gi,
    '$1$2[redacted]',
  ],
];

/** Removes anything token-like from a message. Exported for the logger of other Shopify code. */
export function scrubSecrets(message: string): string {
  return SECRET_PATTERNS.reduce((out, [re, replacement]) => out.replace(re, replacement), message);
}

function libraryLogBridge(logger: Logger) {
  const child = logger.child({ component: 'shopify-api' });
  return (severity: LogSeverity, message: string): void => {
    const msg = scrubSecrets(message);
    if (severity === LogSeverity.Error) child.error(msg);
    else if (severity === LogSeverity.Warning) child.warn(msg);
    else child.debug(msg);
  };
}

// --- SHOPIFY_ADMIN_ORIGIN -------------------------------------------------------------------
// The library sends every request to `https://{shop}` through one process-wide fetch. We replace
// it once with a fetch that rewrites shop hosts to an origin. Several apps in one process (tests)
// may point at different fake shops, so the origin is looked up per shop: each app instance
// records the shops it works on (`routeShop`, called by our token/install code before any
// request); shops not recorded go to the origin of the most recently created app. Production
// never installs the rewrite, and hosts that are not shop domains always pass through.
const originByApi = new WeakMap<ShopifyApi, string>();
const originByShop = new Map<string, string>();
let defaultOrigin: string | undefined;
let installed = false;

function installAdminOriginFetch(): void {
  if (installed) return;
  installed = true;
  const original = currentLibraryFetch();
  setLibraryFetch((input, init) => {
    const rewritten = rewriteUrl(input);
    return rewritten ? original(rewritten, init) : original(input, init);
  });
}

function rewriteUrl(input: Parameters<typeof fetch>[0]): string | null {
  if (typeof input !== 'string' && !(input instanceof URL)) return null; // Request objects pass through
  let url: URL;
  try {
    url = new URL(String(input));
  } catch {
    return null;
  }
  if (url.protocol !== 'https:') return null;
  const shop = sanitizeShop(url.hostname);
  if (!shop) return null;
  const origin = originByShop.get(shop) ?? defaultOrigin;
  return origin ? `${origin}${url.pathname}${url.search}` : null;
}

/**
 * Records that `shopify` is about to talk to `shop`, so that with SHOPIFY_ADMIN_ORIGIN the
 * request reaches that app's origin. A no-op without SHOPIFY_ADMIN_ORIGIN.
 */
export function routeShop(shopify: ShopifyApi, shop: string): void {
  const origin = originByApi.get(shopify);
  if (origin) originByShop.set(shop, origin);
}

/** The origin `https://{shop}` requests go to for this app (for messages and the sandbox). */
export function adminOriginOf(shopify: ShopifyApi): string | undefined {
  return originByApi.get(shopify);
}
