// Admin GraphQL calls that respect Shopify's query cost limits. Same client as shop-query.ts (the
// library's Graphql client with the offline session, routed with routeShop), plus:
// - the cost extension (`extensions.cost`) read from every answer, success or THROTTLED;
// - a THROTTLED answer (HTTP 200 with errors[].extensions.code = THROTTLED, which the library
//   throws as GraphqlQueryError) waits the time the bucket needs to restore the requested cost,
//   then retries, as long as that fits before the caller's deadline;
// - an AbortSignal that cancels the HTTP request when the caller's deadline passes.
import { GraphqlQueryError, type Session } from '@shopify/shopify-api';
import { routeShop, type ShopifyApi } from './api';

export interface ThrottleStatus {
  maximumAvailable: number;
  currentlyAvailable: number;
  restoreRate: number;
}

export interface QueryCost {
  requestedQueryCost: number | null;
  actualQueryCost: number | null;
  throttleStatus: ThrottleStatus | null;
}

/** The Admin API kept throttling and the wait would pass the deadline. */
export class AdminThrottledError extends Error {
  constructor(readonly waitMs: number | null) {
    super(
      waitMs === null ? 'the Admin API is throttling this shop' : `the Admin API is throttling this shop; it needs ${waitMs} ms to restore`,
    );
    this.name = 'AdminThrottledError';
  }
}

/** The caller's deadline passed before the Admin API answered. */
export class AdminDeadlineError extends Error {
  constructor() {
    super('the Admin API did not answer before the deadline');
    this.name = 'AdminDeadlineError';
  }
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const rec = (v: unknown): Record<string, unknown> | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

/** The cost extension of a GraphQL answer body (`{extensions: {cost}}`), or null. */
export function readCost(body: unknown): QueryCost | null {
  const cost = rec(rec(rec(body)?.extensions)?.cost);
  if (!cost) return null;
  const t = rec(cost.throttleStatus);
  const max = num(t?.maximumAvailable);
  const available = num(t?.currentlyAvailable);
  const rate = num(t?.restoreRate);
  return {
    requestedQueryCost: num(cost.requestedQueryCost),
    actualQueryCost: num(cost.actualQueryCost),
    throttleStatus:
      max !== null && available !== null && rate !== null
        ? { maximumAvailable: max, currentlyAvailable: available, restoreRate: rate }
        : null,
  };
}

/** The `extensions.code` of each GraphQL error a GraphqlQueryError carries (THROTTLED, ACCESS_DENIED, ...). */
export function graphqlErrorCodes(err: unknown): string[] {
  if (!(err instanceof GraphqlQueryError)) return [];
  const errors = rec(rec(err.body)?.errors)?.graphQLErrors;
  if (!Array.isArray(errors)) return [];
  return errors.map((e) => rec(rec(e)?.extensions)?.code).filter((c): c is string => typeof c === 'string');
}

export const isThrottled = (err: unknown): boolean => graphqlErrorCodes(err).includes('THROTTLED');

/** How long until the bucket holds `needed` points again, from a throttle status. Null when unknown. */
export function restoreWaitMs(cost: QueryCost | null, needed?: number): number | null {
  const t = cost?.throttleStatus;
  const want = needed ?? cost?.requestedQueryCost ?? null;
  if (!t || want === null || t.restoreRate <= 0) return null;
  if (want > t.maximumAvailable) return null; // never fits: waiting will not help
  const missing = want - t.currentlyAvailable;
  return missing <= 0 ? 0 : Math.ceil((missing / t.restoreRate) * 1000);
}

/**
 * What we last heard of each shop's bucket, so a call that would be throttled is not sent (and
 * does not cost a round trip). An estimate: the bucket restores at restoreRate per second.
 */
export class ThrottleTracker {
  private readonly byShop = new Map<string, { status: ThrottleStatus; at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  observe(shop: string, cost: QueryCost | null): void {
    if (cost?.throttleStatus) this.byShop.set(shop, { status: cost.throttleStatus, at: this.now() });
  }

  /** Milliseconds to wait before `needed` points are expected to be available (0: go now). */
  waitMs(shop: string, needed: number): number {
    const last = this.byShop.get(shop);
    if (!last) return 0;
    const { maximumAvailable, currentlyAvailable, restoreRate } = last.status;
    const available = Math.min(maximumAvailable, currentlyAvailable + ((this.now() - last.at) / 1000) * restoreRate);
    if (available >= needed || restoreRate <= 0) return 0;
    return Math.ceil(((needed - available) / restoreRate) * 1000);
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new AdminDeadlineError());
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AdminDeadlineError());
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface AdminRequestOptions {
  variables?: Record<string, unknown>;
  /** Aborts the HTTP request (and any wait) when the caller gives up. */
  signal?: AbortSignal;
  /** Epoch ms: a wait for the bucket to restore that ends after this is not started. */
  deadline?: number;
  /** Shared bucket estimates; with it a call is held back until its expected cost is available. */
  throttle?: ThrottleTracker;
  /** The expected cost of the query, for the tracker's pre-check. */
  expectedCost?: number;
  now?: () => number;
}

export interface AdminResult<T> {
  data: T;
  cost: QueryCost | null;
  /** THROTTLED answers that were waited out. */
  throttledRetries: number;
}

/**
 * One Admin GraphQL operation with the shop's offline session. Throws AdminThrottledError when
 * the bucket cannot restore before `deadline`, AdminDeadlineError when `signal` aborted, and the
 * library's errors otherwise (classify them with classifyShopifyError).
 */
export async function adminRequest<T>(
  shopify: ShopifyApi,
  session: Session,
  query: string,
  opts: AdminRequestOptions = {},
): Promise<AdminResult<T>> {
  const now = opts.now ?? Date.now;
  const deadline = opts.deadline ?? Number.POSITIVE_INFINITY;
  const shop = session.shop;
  routeShop(shopify, shop);
  const client = new shopify.clients.Graphql({ session });
  let throttledRetries = 0;
  for (;;) {
    const ahead = opts.throttle && opts.expectedCost ? opts.throttle.waitMs(shop, opts.expectedCost) : 0;
    if (ahead > 0) {
      if (now() + ahead >= deadline) throw new AdminThrottledError(ahead);
      await sleep(ahead, opts.signal);
    }
    try {
      const res = await client.request<T>(query, { variables: opts.variables as never, signal: opts.signal });
      const cost = readCost(res);
      opts.throttle?.observe(shop, cost);
      return { data: res.data as T, cost, throttledRetries };
    } catch (err) {
      if (opts.signal?.aborted) throw new AdminDeadlineError();
      if (!isThrottled(err)) throw err;
      const cost = readCost((err as GraphqlQueryError).body);
      opts.throttle?.observe(shop, cost);
      // Unknown restore time: one second, Shopify's documented minimum restore step.
      const wait = restoreWaitMs(cost) ?? 1000;
      if (now() + wait >= deadline) throw new AdminThrottledError(wait);
      throttledRetries++;
      await sleep(Math.max(wait, 50), opts.signal);
    }
  }
}
