// Failures of calls to Shopify, classified once. Library error messages can quote tokens
// (InvalidJwtError repeats the session token), so callers log `describe()`, never `err.message`.
import { GraphqlQueryError, HttpMaxRetriesError, HttpRequestError, HttpResponseError, ShopifyError } from '@shopify/shopify-api';

export type ShopifyFailureKind =
  /** Shopify answered 4xx: the credential or grant was refused. Retrying the same call won't help. */
  | 'rejected'
  /** Network error, 5xx, 429 or an unreadable answer: worth retrying later. */
  | 'unavailable'
  /** A GraphQL-level error in a 200 answer. */
  | 'graphql'
  /** The library refused the input before calling Shopify (bad JWT, shop, hmac, ...). */
  | 'invalid';

export interface ShopifyFailure {
  kind: ShopifyFailureKind;
  status?: number;
  /** The OAuth `error` code Shopify sent, e.g. `invalid_grant`, when it is a plain word. */
  code?: string;
}

export function classifyShopifyError(err: unknown): ShopifyFailure {
  if (err instanceof GraphqlQueryError) return { kind: 'graphql', status: 200 };
  if (err instanceof HttpResponseError) {
    const status = err.response.code;
    const body = err.response.body as { error?: unknown } | undefined;
    const code = typeof body?.error === 'string' && /^[a-z_]{1,64}$/.test(body.error) ? body.error : undefined;
    if (status === 429 || status >= 500) return { kind: 'unavailable', status, code };
    return { kind: 'rejected', status, code };
  }
  if (err instanceof HttpRequestError || err instanceof HttpMaxRetriesError) return { kind: 'unavailable' };
  if (err instanceof ShopifyError) return { kind: 'invalid' };
  // fetch failures (TypeError), unreadable answers (SyntaxError), timeouts
  return { kind: 'unavailable' };
}

/** A log- and message-safe description: kind, status and code, no free text from the library. */
export function describeShopifyError(err: unknown): string {
  const f = classifyShopifyError(err);
  // Library errors keep name 'Error'; their class name says more (InvalidJwtError, ...).
  const name = err instanceof ShopifyError ? err.constructor.name : err instanceof Error ? err.name : 'Error';
  return [f.kind, f.status && `HTTP ${f.status}`, f.code, name].filter(Boolean).join(', ');
}
