// Requests Shopify forwards through the app proxy (`[app_proxy]` in shopify.app.toml): Shopify
// adds `shop`, `logged_in_customer_id` (empty for a guest), `path_prefix`, `timestamp` and
// `signature` to the query. The signature is Shopify's documented one: every query parameter but
// `signature`, a repeated key's values joined by commas, the `key=value` strings (decoded) sorted
// and concatenated with no separator, HMAC-SHA256 in hex with the app secret. Only a request that
// carries a valid signature and a timestamp within MAX_SKEW_SECONDS of now is Shopify's; the body
// is not signed, so nothing in it is trusted as Shopify's word. Pure: the clock is the caller's.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Shopify's own validator allows this much clock skew; an older (or later) request is refused. */
export const MAX_SKEW_SECONDS = 90;

const SHOP_DOMAIN = /^[a-z0-9][a-z0-9-]*\.myshopify\.com$/;
const HEX_64 = /^[0-9a-f]{64}$/i;
const DIGITS = /^\d{1,20}$/;

export type AppProxyRejection =
  /** No `signature` in the query (or more than one). */
  | 'missing_signature'
  /** A signature that is not the HMAC of this query with the app secret. */
  | 'bad_signature'
  /** Signed, but the timestamp is missing or more than MAX_SKEW_SECONDS from now. */
  | 'stale'
  /** Signed and fresh, but without a shop domain Shopify would send. */
  | 'no_shop';

export type AppProxyCheck =
  | {
      ok: true;
      /** The shop's myshopify domain, lower-cased. */
      shop: string;
      /** The logged-in customer's numeric id, or null for a guest. */
      loggedInCustomerId: string | null;
      /** Where the storefront serves the proxy (`/apps/email-connector`, or the merchant's own path). */
      pathPrefix: string | null;
      /** Seconds since the epoch, as Shopify signed it. */
      timestamp: number;
    }
  | { ok: false; reason: AppProxyRejection };

/** The query's parameters in order, decoded (`+` as a space, as a form encodes it). */
export function queryParams(query: string | URLSearchParams): Array<[string, string]> {
  const params = typeof query === 'string' ? new URLSearchParams(query.startsWith('?') ? query.slice(1) : query) : query;
  return [...params.entries()];
}

/** The string Shopify signs: `key=v1,v2` per key but `signature`, sorted, concatenated. */
export function signedMessage(params: ReadonlyArray<readonly [string, string]>): string {
  const byKey = new Map<string, string[]>();
  for (const [key, value] of params) {
    if (key === 'signature') continue;
    const values = byKey.get(key);
    if (values) values.push(value);
    else byKey.set(key, [value]);
  }
  return [...byKey]
    .map(([key, values]) => `${key}=${values.join(',')}`)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .join('');
}

/** The signature Shopify would send for these parameters (what the sandbox's proxy signs with). */
export function signAppProxy(params: ReadonlyArray<readonly [string, string]>, secret: string): string {
  return createHmac('sha256', secret).update(signedMessage(params), 'utf8').digest('hex');
}

/**
 * Whether a forwarded query is Shopify's: the signature first (a forged request is refused
 * whatever its timestamp says), then the timestamp against `nowMs`, then the shop. Constant-time
 * comparison of the signature.
 */
export function verifyAppProxy(query: string | URLSearchParams, secret: string, nowMs: number): AppProxyCheck {
  const params = queryParams(query);
  const signatures = params.filter(([k]) => k === 'signature').map(([, v]) => v);
  if (signatures.length !== 1 || signatures[0] === '') return { ok: false, reason: 'missing_signature' };
  const given = signatures[0]!;
  if (!HEX_64.test(given)) return { ok: false, reason: 'bad_signature' };
  const expected = Buffer.from(signAppProxy(params, secret), 'hex');
  if (!timingSafeEqual(expected, Buffer.from(given, 'hex'))) return { ok: false, reason: 'bad_signature' };

  const one = (key: string): string | null => {
    const values = params.filter(([k]) => k === key).map(([, v]) => v);
    return values.length === 1 ? values[0]! : null;
  };
  const ts = one('timestamp');
  if (ts === null || !DIGITS.test(ts)) return { ok: false, reason: 'stale' };
  const timestamp = Number(ts);
  if (Math.abs(nowMs / 1000 - timestamp) > MAX_SKEW_SECONDS) return { ok: false, reason: 'stale' };

  const shop = one('shop')?.trim().toLowerCase() ?? '';
  if (!SHOP_DOMAIN.test(shop)) return { ok: false, reason: 'no_shop' };
  const customer = one('logged_in_customer_id')?.trim() ?? '';
  return {
    ok: true,
    shop,
    loggedInCustomerId: DIGITS.test(customer) ? customer : null,
    pathPrefix: one('path_prefix'),
    timestamp,
  };
}
