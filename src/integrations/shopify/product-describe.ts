// What storefront events say about a product comes from Shopify: the pixel names a
// product and variant by id, and this answers with Shopify's title, variant title, SKU, price,
// currency, product page and image, from the product cache (ProductInfo) or nodes(ids:) calls.
// - rows answer for 24 h (the catalog's TTL), and for a minute without a read in this process;
// - misses are looked up together, as few calls as Shopify's limits allow (MAX_IDS_PER_CALL ids a
//   call, a product with its variants in one call), within a per-shop budget of query cost in this
//   process (`lookupsPerMinute` lookups of BUDGET_IDS_PER_LOOKUP ids a minute): the ids come from
//   the browser, so they must not be able to spend the shop's Admin API budget;
// - the caller waits until its deadline; a lookup still running then goes on in the background
//   (up to LOOKUP_TIMEOUT_MS) and caches its answer, and ids already being looked up in this
//   process are waited for, not asked again: what a slow Admin API answers is never wasted;
// - what Shopify confirms is cached; ids it does not have are remembered in memory only;
// - a stale row still answers when Shopify cannot; a failed lookup stops the shop's lookups for a
//   while (cooling), logged once a minute per shop.
import type { Session } from '@shopify/shopify-api';
import type { Db } from '../../db/client';
import type { Logger } from '../../observability/logger';
import { LogOnce } from '../../observability/log-once';
import { TokenBuckets } from '../../lib/rate-limit';
import type { ShopifyApi } from './api';
import { AdminDeadlineError, AdminThrottledError, type ThrottleTracker } from './admin-graphql';
import { describeShopifyError } from './errors';
import { confirmedVariants, fromLookup, fromRow, toRowData, type CachedProduct } from './product-cache';
import { factsOf, hasFacts, isMissing, numericId, UnknownIds, type Described, type ProductRef } from './product-facts';
import { expectedLookupCost, lookupProducts, MAX_NODES_PER_CALL, type FetchedVariant } from './product-query';

export type DescribeOutcome =
  'hit' | 'fetched' | 'no_scope' | 'over_budget' | 'cooling_off' | 'in_flight' | 'timeout' | 'throttled' | 'failed';

export interface DescribeResult {
  /** One answer per reference, in order ('unavailable': not described yet, ask again later). */
  items: Described[];
  /** The least settled of what happened: a failure, a lookup still running, budget, cooling, ... or hit. */
  outcome: DescribeOutcome;
  /** Admin API calls answered before the deadline. */
  apiCalls: number;
}

/** Ids one lookup asks for at most: Shopify's limit for nodes(ids:), about 500 cost points of the 1000 a query may request. */
export const MAX_IDS_PER_CALL = MAX_NODES_PER_CALL;
/** The per-shop budget is query cost: `lookupsPerMinute` lookups of this many ids a minute. */
export const BUDGET_IDS_PER_LOOKUP = 100;
/** How long a lookup goes on after its caller stopped waiting: its answer is cached for the next caller. */
export const LOOKUP_TIMEOUT_MS = 30_000;
const MEMO_MS = 60_000;
const MEMO_MAX = 20_000;

export interface DescribeContext {
  db: Db;
  shopify: ShopifyApi;
  logger: Logger;
  ttlMs: number;
  now: () => Date;
  throttle: ThrottleTracker;
  /** Whether the shop granted read_products (false: nothing is asked or answered). */
  allowed(shop: { id: string; domain: string; scope?: string | null }): Promise<boolean>;
  /** The shop's offline session, re-checked for read_products; null when revoked since. */
  session(shop: { id: string; domain: string }): Promise<Session | null>;
  cooling: { active(shopId: string): boolean; start(shopId: string): void };
  domains: { remember(shopId: string, url: string): void; known(shopId: string): string | null };
  lookupsPerMinute: number;
  /** Told of every Admin API call made, whether its caller still waits for it or not. */
  onCalls?(n: number): void;
}

export interface Describer {
  describe(
    shop: { id: string; domain: string; scope?: string | null },
    refs: readonly ProductRef[],
    deadline: number,
  ): Promise<DescribeResult>;
  /** A product changed or went (products/update, products/delete): this process forgets what it held. */
  forget(shopId: string, productId: string): void;
}

type Variants = Map<string, Set<string>>;
/** One Admin API call's share of a lookup: products with the variants named under them. */
interface Chunk {
  products: string[];
  variants: Variants;
}

/** Packs products and variants into calls of at most `size` ids, each product with its variants. */
export function chunksOf(products: readonly string[], variants: Variants, size: number): Chunk[] {
  const groups: Array<{ products: string[]; variants: Array<[string, Set<string>]> }> = products.map((pid) => ({
    products: [pid],
    variants: [],
  }));
  const byProduct = new Map(groups.map((g) => [g.products[0]!, g]));
  const loose: Array<[string, Set<string>]> = [];
  for (const [vid, pids] of variants) {
    const home = [...pids].map((pid) => byProduct.get(pid)).find((g) => g !== undefined);
    (home?.variants ?? loose).push([vid, pids]);
  }
  const out: Chunk[] = [];
  let current: Chunk = { products: [], variants: new Map() };
  const room = () => size - current.products.length - current.variants.size;
  const flush = () => {
    if (current.products.length || current.variants.size) out.push(current);
    current = { products: [], variants: new Map() };
  };
  for (const g of [...groups, { products: [], variants: loose }]) {
    // a product's group starts a call of its own rather than be split; loose variants fill any room
    const n = g.products.length + g.variants.length;
    if (g.products.length && n > room() && n <= size) flush();
    for (const pid of g.products) {
      if (room() <= 0) flush();
      current.products.push(pid);
    }
    for (const [vid, pids] of g.variants) {
      if (room() <= 0) flush();
      current.variants.set(vid, pids);
    }
  }
  flush();
  return out;
}

export function createDescriber(ctx: DescribeContext): Describer {
  const unknown = new UnknownIds(ctx.ttlMs);
  const memo = new Map<string, { row: CachedProduct; until: number }>();
  const nowMs = () => ctx.now().getTime();
  const budgetPoints = Math.max(0, ctx.lookupsPerMinute) * expectedLookupCost(BUDGET_IDS_PER_LOOKUP);
  const idsPerCall = Math.min(MAX_IDS_PER_CALL, Math.floor((budgetPoints - expectedLookupCost(0)) / 2));
  const budget = new TokenBuckets({ rate: Math.max(budgetPoints, 1e-9) / 60, burst: Math.max(1, budgetPoints), maxKeys: 50_000, nowMs });
  const logOnce = new LogOnce(ctx.logger, 60_000, nowMs);
  /** Lookups running in this process, by the product or variant they ask for. */
  const flying = new Map<string, Promise<void>>();
  const memoKey = (shopId: string, productId: string) => `${shopId}\u0000${productId}`;
  const flyKey = (shopId: string, kind: 'p' | 'v', id: string) => `${shopId}\u0000${kind}\u0000${id}`;
  const fresh = (p: CachedProduct) => nowMs() - p.fetchedAt.getTime() < ctx.ttlMs;

  function remember(shopId: string, row: CachedProduct): void {
    const k = memoKey(shopId, row.productId);
    memo.delete(k);
    memo.set(k, { row, until: nowMs() + MEMO_MS });
    if (memo.size > MEMO_MAX)
      for (const key of memo.keys())
        if (memo.size > MEMO_MAX / 2) memo.delete(key);
        else break;
  }

  const remembered = (shopId: string, productId: string) => {
    const m = memo.get(memoKey(shopId, productId));
    return m && m.until > nowMs() ? m.row : undefined;
  };

  /** Rows of these products: this process's copies younger than a minute, the others read at once. */
  async function rows(shopId: string, productIds: string[]): Promise<Map<string, CachedProduct>> {
    const out = new Map<string, CachedProduct>();
    const read: string[] = [];
    for (const id of productIds) {
      const row = remembered(shopId, id);
      if (row) out.set(id, row);
      else read.push(id);
    }
    if (read.length) {
      for (const r of await ctx.db.productInfo.findMany({ where: { shopId, productId: { in: read } } })) {
        const row = fromRow(r);
        out.set(row.productId, row);
        remember(shopId, row);
      }
    }
    return out;
  }

  /** One call's lookup, cached as it comes back; throws like lookupProducts. */
  async function fetchMisses(
    shop: { id: string; domain: string },
    session: Session,
    cached: Map<string, CachedProduct>,
    { products, variants }: Chunk,
    signal: AbortSignal,
    deadline: number,
  ): Promise<number> {
    const found = await lookupProducts(ctx.shopify, session, products, [...variants.keys()], { signal, deadline, throttle: ctx.throttle });
    if (found.primaryDomain) ctx.domains.remember(shop.id, found.primaryDomain);
    const domain = found.primaryDomain ?? ctx.domains.known(shop.id);
    const at = ctx.now();
    const byProduct = new Map<string, Array<[string, FetchedVariant | null]>>();
    for (const [vid, v] of found.variants) {
      // the same variant may be named under several products: only its own is right
      for (const pid of variants.get(vid) ?? []) {
        byProduct.set(pid, [...(byProduct.get(pid) ?? []), [vid, v]]);
        if (!v || v.productId !== pid) unknown.add(UnknownIds.variant(shop.id, pid, vid), nowMs());
      }
    }
    const updates: CachedProduct[] = [];
    for (const pid of products) {
      const product = found.products.get(pid) ?? null;
      if (!product) {
        unknown.add(UnknownIds.product(shop.id, pid), nowMs());
        cached.delete(pid);
        continue;
      }
      updates.push(fromLookup(pid, product, byProduct.get(pid) ?? [], domain, at, found.currency));
    }
    for (const [pid, list] of byProduct) {
      const current = remembered(shop.id, pid) ?? cached.get(pid);
      if (products.includes(pid) || !current) continue;
      // a fresh row that had not seen this variant: add what Shopify confirmed, keep the row's age
      const confirmed = confirmedVariants(pid, list);
      if (Object.keys(confirmed).length === 0) continue;
      updates.push({
        ...current,
        variants: { ...current.variants, ...confirmed },
        variantImages: {
          ...current.variantImages,
          ...Object.fromEntries(list.filter(([vid]) => vid in confirmed).map(([vid, v]) => [vid, v?.image ?? null])),
        },
      });
    }
    for (const u of updates) {
      cached.set(u.productId, u);
      remember(shop.id, u);
    }
    // the answer stands even if the cache write fails (it is only a cache)
    await ctx.db
      .$transaction(
        updates.map((u) =>
          ctx.db.productInfo.upsert({
            where: { shopId_productId: { shopId: shop.id, productId: u.productId } },
            create: { shopId: shop.id, productId: u.productId, ...toRowData(u) },
            update: toRowData(u),
          }),
        ),
      )
      .catch((err: unknown) => ctx.logger.warn({ shop: shop.domain, err: (err as Error)?.name }, 'could not cache products'));
    return found.calls;
  }

  /**
   * Starts one call's lookup, in the background: it has LOOKUP_TIMEOUT_MS, whoever waits for it.
   * Resolves (never rejects) with how it ended; its ids are in flight meanwhile.
   */
  function launch(
    shop: { id: string; domain: string },
    session: Session,
    cached: Map<string, CachedProduct>,
    chunk: Chunk,
  ): Promise<'fetched' | 'throttled' | 'timeout' | 'failed'> {
    const controller = new AbortController();
    const timeoutAt = Date.now() + LOOKUP_TIMEOUT_MS;
    const timer = setTimeout(() => controller.abort(), LOOKUP_TIMEOUT_MS);
    timer.unref?.();
    const run = fetchMisses(shop, session, cached, chunk, controller.signal, timeoutAt).then(
      (calls) => {
        ctx.onCalls?.(calls);
        logOnce.clear(`products:${shop.id}`);
        return 'fetched' as const;
      },
      (err: unknown) => {
        ctx.onCalls?.(1);
        ctx.cooling.start(shop.id);
        const outcome =
          err instanceof AdminThrottledError
            ? ('throttled' as const)
            : err instanceof AdminDeadlineError || controller.signal.aborted
              ? ('timeout' as const)
              : ('failed' as const);
        logOnce.log(
          'warn',
          `products:${shop.id}`,
          {
            shop: shop.domain,
            outcome,
            ids: chunk.products.length + chunk.variants.size,
            failure:
              err instanceof Error && !(err instanceof AdminThrottledError || err instanceof AdminDeadlineError)
                ? describeShopifyError(err)
                : (err as Error).message,
          },
          'storefront products unavailable from Shopify; their events wait for a later lookup',
        );
        return outcome;
      },
    );
    const done = run.then(() => undefined).finally(() => clearTimeout(timer));
    const keys = [
      ...chunk.products.map((pid) => flyKey(shop.id, 'p', pid)),
      ...[...chunk.variants.keys()].map((vid) => flyKey(shop.id, 'v', vid)),
    ];
    for (const k of keys) flying.set(k, done);
    void done.then(() => {
      for (const k of keys) if (flying.get(k) === done) flying.delete(k);
    });
    return run;
  }

  /** Waits for these until `deadline` (Date.now epoch ms); true when they all ended. */
  async function until<T>(work: Array<Promise<T>>, deadline: number): Promise<boolean> {
    if (work.length === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
    });
    try {
      return await Promise.race([Promise.all(work).then(() => true as const), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    forget(shopId, productId) {
      memo.delete(memoKey(shopId, productId));
      unknown.forgetProduct(shopId, productId);
    },

    async describe(shop, refs, deadline) {
      const ids = refs.map((r) => ({
        pid: numericId(r.product_id, 'Product'),
        vid: numericId(r.variant_id, 'ProductVariant'),
        named: r.variant_id !== null,
      }));
      const wanted = [...new Set(ids.flatMap((i) => (i.pid && (!i.named || i.vid) ? [i.pid] : [])))];
      const isUnknown = (pid: string, vid: string | null) =>
        unknown.has(UnknownIds.product(shop.id, pid), nowMs()) ||
        (vid !== null && unknown.has(UnknownIds.variant(shop.id, pid, vid), nowMs()));
      function answer(cached: Map<string, CachedProduct>): Described[] {
        return ids.map(({ pid, vid, named }) => {
          if (!pid || (named && !vid)) return 'unknown';
          if (isUnknown(pid, vid)) return 'unknown';
          const row = cached.get(pid);
          if (!row || !hasFacts(row)) return 'unavailable';
          if (isMissing(row)) return 'unknown';
          return factsOf(row, vid) ?? 'unavailable';
        });
      }
      if (wanted.length === 0) return { items: answer(new Map()), outcome: 'hit', apiCalls: 0 };
      const nothing = (outcome: DescribeOutcome): DescribeResult => ({ items: answer(new Map()), outcome, apiCalls: 0 });
      if (!(await ctx.allowed(shop))) return nothing('no_scope');
      const cached = await rows(
        shop.id,
        wanted.filter((pid) => !unknown.has(UnknownIds.product(shop.id, pid), nowMs())),
      );

      const products: string[] = [];
      const variants: Variants = new Map();
      for (const { pid, vid } of ids) {
        if (!pid || isUnknown(pid, vid)) continue;
        const row = cached.get(pid);
        const stale = !row || !fresh(row) || !hasFacts(row);
        if (stale && !products.includes(pid)) products.push(pid);
        if (vid !== null && (stale || (!isMissing(row!) && !row!.variants[vid])))
          variants.set(vid, (variants.get(vid) ?? new Set()).add(pid));
      }
      if (products.length === 0 && variants.size === 0) return { items: answer(cached), outcome: 'hit', apiCalls: 0 };

      // what this process is looking up already is waited for, not asked again
      const waited = new Set<Promise<void>>();
      const ask: Chunk = { products: [], variants: new Map() };
      for (const pid of products) {
        const flight = flying.get(flyKey(shop.id, 'p', pid));
        if (flight) waited.add(flight);
        else ask.products.push(pid);
      }
      for (const [vid, pids] of variants) {
        const flight = flying.get(flyKey(shop.id, 'v', vid));
        if (flight) waited.add(flight);
        else ask.variants.set(vid, pids);
      }
      let outcome: DescribeOutcome = 'in_flight';
      const started: Array<Promise<'fetched' | 'throttled' | 'timeout' | 'failed'>> = [];
      if (ask.products.length || ask.variants.size) {
        if (ctx.cooling.active(shop.id)) outcome = 'cooling_off';
        else if (idsPerCall <= 0) outcome = 'over_budget';
        else {
          const session = await ctx.session(shop);
          if (!session) return nothing('no_scope');
          outcome = 'fetched';
          // what the budget cannot pay for now is asked by a later caller
          for (const chunk of chunksOf(ask.products, ask.variants, idsPerCall)) {
            if (!budget.take(shop.id, expectedLookupCost(chunk.products.length + chunk.variants.size))) {
              outcome = 'over_budget';
              break;
            }
            started.push(launch(shop, session, cached, chunk));
          }
        }
      }
      const ended = await until<unknown>([...started, ...waited], deadline);
      // lookups of other callers that ended meanwhile left their rows in this process's memo
      for (const pid of wanted) {
        const row = remembered(shop.id, pid);
        if (row && (!cached.has(pid) || row.fetchedAt >= cached.get(pid)!.fetchedAt)) cached.set(pid, row);
      }
      const results = await Promise.all(started.map((p) => Promise.race([p, Promise.resolve('running' as const)])));
      const apiCalls = results.filter((r) => r !== 'running').length;
      const failed = results.find((r) => r === 'throttled' || r === 'failed');
      if (failed) outcome = failed;
      else if (!ended) outcome = 'timeout';
      else if (outcome === 'in_flight' && waited.size) outcome = 'fetched';
      return { items: answer(cached), outcome, apiCalls };
    },
  };
}
