// Everything the import says to Shopify: run a bulk query, read its state, cancel it, count
// objects, and download the JSONL result (with a Range request when resuming). Failures are
// classified once into BulkSourceError kinds; the runner branches on the kind only.
import { GraphqlQueryError } from '@shopify/shopify-api';
import { request } from 'undici';
import type { Logger } from '../observability/logger';
import { routeShop, type ShopifyApi } from '../integrations/shopify/api';
import { classifyShopifyError, describeShopifyError } from '../integrations/shopify/errors';
import type { OfflineTokens } from '../integrations/shopify/tokens';
import type { Kind } from './progress';
import { isShopifyStorageUrl, SHOPIFY_STORAGE_HOSTS } from './result-url';
import { BULK_OPERATION, bulkQuery, CANCEL_BULK_OPERATION, COUNT_CUSTOMERS, COUNT_ORDERS, RUN_BULK_QUERY, sinceFilter } from './queries';

export type BulkStatus = 'CREATED' | 'RUNNING' | 'COMPLETED' | 'CANCELING' | 'CANCELED' | 'FAILED' | 'EXPIRED';

export interface BulkOperation {
  id: string;
  status: BulkStatus;
  errorCode: string | null;
  objectCount: number;
  rootObjectCount: number | null;
  /** The JSONL result; null while running, and for a completed operation that found nothing. */
  url: string | null;
}

export type BulkFailureKind =
  /** Network, 5xx, 429, throttling: try again later. */
  | 'retryable'
  /** Shopify refused us (no token, revoked, missing scope): a person must act. */
  | 'rejected'
  /** Another bulk query of this app runs on the shop: wait for it. */
  | 'busy'
  /** The result URL no longer answers (results live seven days): run the operation again. */
  | 'expired'
  /** Anything else Shopify said no to. */
  | 'failed';

export class BulkSourceError extends Error {
  constructor(
    readonly kind: BulkFailureKind,
    message: string,
  ) {
    super(message);
    this.name = 'BulkSourceError';
  }
}

export interface OpenedResult {
  chunks: AsyncIterable<Uint8Array>;
  /** Where the body starts in the file: the requested byte, or 0 when the server ignored Range. */
  fromByte: number;
}

/** What the runner needs from Shopify; tests may supply their own. */
export interface BulkSource {
  run(shop: string, kind: Kind, since: Date | null): Promise<{ id: string }>;
  get(shop: string, id: string): Promise<BulkOperation | null>;
  cancel(shop: string, id: string): Promise<void>;
  count(shop: string, kind: Kind, since: Date | null): Promise<number | null>;
  open(url: string, fromByte: number, signal: AbortSignal): Promise<OpenedResult>;
}

export interface ShopifyBulkDeps {
  shopify: ShopifyApi;
  tokens: OfflineTokens;
  logger: Logger;
  /** SHOPIFY_ADMIN_ORIGIN: result URLs on a shop host go there (development and tests). */
  adminOrigin?: string;
  /** Production fetches result URLs on Shopify's storage hosts only (result-url.ts). */
  production: boolean;
  downloadTimeoutMs?: number;
}

interface UserError {
  field?: string[] | null;
  message?: string;
  code?: string | null;
}

const num = (v: unknown): number | null => (v === null || v === undefined || v === '' || !Number.isFinite(Number(v)) ? null : Number(v));

function toOperation(raw: Record<string, unknown> | null | undefined): BulkOperation | null {
  if (!raw || typeof raw.id !== 'string') return null;
  return {
    id: raw.id,
    status: String(raw.status ?? 'RUNNING') as BulkStatus,
    errorCode: typeof raw.errorCode === 'string' ? raw.errorCode : null,
    objectCount: num(raw.objectCount) ?? 0,
    rootObjectCount: num(raw.rootObjectCount),
    url: typeof raw.url === 'string' && raw.url ? raw.url : null,
  };
}

function graphqlFailure(err: GraphqlQueryError): BulkSourceError {
  const errors =
    (err.body as { errors?: { graphQLErrors?: Array<{ message?: string; extensions?: { code?: string } }> } } | undefined)?.errors
      ?.graphQLErrors ?? [];
  if (errors.some((e) => e.extensions?.code === 'THROTTLED'))
    return new BulkSourceError('retryable', 'Shopify is throttling the Admin API');
  const first = errors[0];
  const text = (first?.message ?? 'GraphQL error').slice(0, 300);
  if (first?.extensions?.code === 'ACCESS_DENIED') return new BulkSourceError('rejected', `Shopify denied access: ${text}`);
  return new BulkSourceError('failed', `Shopify answered with an error: ${text}`);
}

export function createShopifyBulkSource(deps: ShopifyBulkDeps): BulkSource {
  const { shopify, tokens, logger } = deps;

  async function call<T>(shop: string, query: string, variables: Record<string, unknown>, retried = false): Promise<T> {
    const session = await tokens.getOfflineSession(shop);
    if (!session)
      throw new BulkSourceError('rejected', 'The app has no valid access token for this shop; the merchant must open the app again');
    routeShop(shopify, shop);
    try {
      const client = new shopify.clients.Graphql({ session });
      const res = await client.request<T>(query, { variables });
      return res.data as T;
    } catch (err) {
      if (err instanceof GraphqlQueryError) throw graphqlFailure(err);
      const f = classifyShopifyError(err);
      if (f.kind === 'rejected' && f.status === 401 && !retried) {
        // the token may have been rotated elsewhere: refresh once and retry
        if (await tokens.refreshOfflineSession(shop)) return call<T>(shop, query, variables, true);
      }
      logger.debug({ shop, failure: describeShopifyError(err) }, 'bulk import: Admin API call failed');
      if (f.kind === 'unavailable') throw new BulkSourceError('retryable', `Shopify could not be reached (${describeShopifyError(err)})`);
      if (f.kind === 'rejected' || f.kind === 'invalid')
        throw new BulkSourceError(
          'rejected',
          `Shopify refused the request (${describeShopifyError(err)}); the merchant may need to open the app again`,
        );
      throw new BulkSourceError('retryable', `Admin API call failed (${describeShopifyError(err)})`);
    }
  }

  function resultUrl(raw: string): string {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new BulkSourceError('failed', 'Shopify gave a result URL that is not a URL');
    }
    if (deps.production && !isShopifyStorageUrl(url)) {
      // the host alone: the rest of a signed URL is a credential
      throw new BulkSourceError(
        'failed',
        `Shopify gave a result URL on ${url.protocol}//${url.host}, which is not Shopify's storage (https on ${SHOPIFY_STORAGE_HOSTS.map((h) => (h.startsWith('.') ? `*${h}` : h)).join(', ')}): not fetched`,
      );
    }
    if (deps.adminOrigin && url.protocol === 'https:' && /\.myshopify\.com$/i.test(url.hostname)) {
      return `${deps.adminOrigin}${url.pathname}${url.search}`;
    }
    if (url.protocol !== 'https:' && (deps.production || url.protocol !== 'http:')) {
      throw new BulkSourceError('failed', 'Shopify gave a result URL that is not https');
    }
    return url.toString();
  }

  return {
    async run(shop, kind, since) {
      const data = await call<{ bulkOperationRunQuery?: { bulkOperation?: { id?: string } | null; userErrors?: UserError[] } }>(
        shop,
        RUN_BULK_QUERY,
        { query: bulkQuery(kind, since), groupObjects: kind === 'orders' },
      );
      const payload = data.bulkOperationRunQuery;
      const errors = payload?.userErrors ?? [];
      if (errors.length) {
        const text = errors
          .map((e) => e.message ?? e.code ?? 'error')
          .join('; ')
          .slice(0, 300);
        if (/in progress|already|OPERATION_IN_PROGRESS|LIMIT_REACHED/i.test(`${text} ${errors.map((e) => e.code ?? '').join(' ')}`)) {
          throw new BulkSourceError('busy', `Another bulk operation is running on the shop: ${text}`);
        }
        throw new BulkSourceError('failed', `Shopify refused the bulk query: ${text}`);
      }
      const id = payload?.bulkOperation?.id;
      if (!id) throw new BulkSourceError('failed', 'Shopify started no bulk operation');
      return { id };
    },

    async get(shop, id) {
      const data = await call<{ node?: Record<string, unknown> | null }>(shop, BULK_OPERATION, { id });
      return toOperation(data.node);
    },

    async cancel(shop, id) {
      await call(shop, CANCEL_BULK_OPERATION, { id });
    },

    async count(shop, kind, since) {
      const data =
        kind === 'customers'
          ? await call<{ customersCount?: { count?: unknown } }>(shop, COUNT_CUSTOMERS, {})
          : await call<{ ordersCount?: { count?: unknown } }>(shop, COUNT_ORDERS, { query: sinceFilter(since) });
      const c =
        kind === 'customers'
          ? (data as { customersCount?: { count?: unknown } }).customersCount
          : (data as { ordersCount?: { count?: unknown } }).ordersCount;
      return num(c?.count);
    },

    async open(raw, fromByte, signal) {
      const url = resultUrl(raw);
      const timeout = deps.downloadTimeoutMs ?? 60_000;
      let res: Awaited<ReturnType<typeof request>>;
      try {
        res = await request(url, {
          method: 'GET',
          headers: fromByte > 0 ? { range: `bytes=${fromByte}-` } : {},
          signal,
          headersTimeout: timeout,
          bodyTimeout: timeout,
        });
      } catch (err) {
        if (signal.aborted) throw err;
        throw new BulkSourceError('retryable', `The result file could not be downloaded: ${(err as Error).name}`);
      }
      const status = res.statusCode;
      if (status === 206) {
        const m = /^bytes (\d+)-/.exec(String(res.headers['content-range'] ?? ''));
        if (m && Number(m[1]) === fromByte) return { chunks: res.body, fromByte };
        res.body.destroy();
        throw new BulkSourceError('retryable', 'The result server answered another range than asked');
      }
      if (status === 200) return { chunks: res.body, fromByte: 0 };
      await res.body.dump().catch(() => undefined);
      if (status === 416) return { chunks: (async function* () {})(), fromByte }; // nothing after fromByte
      if (status === 429 || status >= 500) throw new BulkSourceError('retryable', `The result server answered ${status}`);
      throw new BulkSourceError('expired', `The result file is no longer available (HTTP ${status})`);
    },
  };
}
