// What storefront events say about a product comes from Shopify: the pixel names a
// product and variant by id, and this answers with Shopify's title, variant title, SKU, price,
// currency, product page and image, from the product cache (ProductInfo) or one nodes(ids:) call.
// - rows answer for 24 h (the catalog's TTL), and for a minute without a read in this process;
// - misses are looked up together, within the caller's deadline (a stale row still answers
//   when Shopify cannot), at most `lookupsPerMinute` calls per shop in this process and at most
//   MAX_IDS_PER_CALL ids a call: the ids come from the browser, so they must not be able to spend
//   the shop's Admin API budget;
// - what Shopify confirms is cached; ids it does not have are remembered in memory only.
import type { Session } from '@shopify/shopify-api';
import type { Db } from '../../db/client';
import type { Logger } from '../../observability/logger';
import { TokenBuckets } from '../../lib/rate-limit';
import type { ShopifyApi } from './api';
import { AdminDeadlineError, AdminThrottledError, type ThrottleTracker } from './admin-graphql';
import { describeShopifyError } from './errors';
import { confirmedVariants, fromLookup, fromRow, toRowData, type CachedProduct } from './product-cache';
import { factsOf, hasFacts, isMissing, numericId, UnknownIds, type Described, type ProductRef } from './product-facts';
import { lookupProducts, type FetchedVariant } from './product-query';

export type DescribeOutcome = 'hit' | 'fetched' | 'no_scope' | 'over_budget' | 'cooling_off' | 'timeout' | 'throttled' | 'failed';

export interface DescribeResult {
  /** One answer per reference, in order. */
  items: Described[];
  outcome: DescribeOutcome;
  /** Admin API calls made. */
  apiCalls: number;
}

/** Ids one storefront lookup asks for at most (about 2 cost points each). */
export const MAX_IDS_PER_CALL = 100;
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

export function createDescriber(ctx: DescribeContext): Describer {
  const unknown = new UnknownIds(ctx.ttlMs);
  const memo = new Map<string, { row: CachedProduct; until: number }>();
  const budget = new TokenBuckets({
    rate: Math.max(ctx.lookupsPerMinute, 1e-9) / 60,
    burst: Math.max(1, ctx.lookupsPerMinute),
    maxKeys: 50_000,
  });
  const memoKey = (shopId: string, productId: string) => `${shopId}\u0000${productId}`;
  const nowMs = () => ctx.now().getTime();
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

  /** Rows of these products: this process's copies younger than a minute, the others read at once. */
  async function rows(shopId: string, productIds: string[]): Promise<Map<string, CachedProduct>> {
    const out = new Map<string, CachedProduct>();
    const read: string[] = [];
    for (const id of productIds) {
      const m = memo.get(memoKey(shopId, id));
      if (m && m.until > nowMs()) out.set(id, m.row);
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

  async function fetchMisses(
    shop: { id: string; domain: string },
    session: Session,
    cached: Map<string, CachedProduct>,
    products: string[],
    variants: Map<string, Set<string>>,
    deadline: number,
  ): Promise<number> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), Math.max(0, deadline - Date.now()));
    try {
      const found = await lookupProducts(ctx.shopify, session, products, [...variants.keys()], {
        signal: controller.signal,
        deadline,
        throttle: ctx.throttle,
      });
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
        const current = cached.get(pid);
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
      const unavailable = (outcome: DescribeOutcome, apiCalls = 0): DescribeResult => ({ items: answer(new Map()), outcome, apiCalls });
      const isUnknown = (pid: string, vid: string | null) =>
        unknown.has(UnknownIds.product(shop.id, pid), nowMs()) ||
        (vid !== null && unknown.has(UnknownIds.variant(shop.id, pid, vid), nowMs()));
      function answer(cached: Map<string, CachedProduct>, pending: Set<string> = new Set()): Described[] {
        return ids.map(({ pid, vid, named }) => {
          if (!pid || (named && !vid)) return 'unknown';
          if (isUnknown(pid, vid)) return 'unknown';
          const row = cached.get(pid);
          if (!row || pending.has(pid) || !hasFacts(row)) return 'unavailable';
          if (isMissing(row)) return 'unknown';
          return factsOf(row, vid) ?? 'unavailable';
        });
      }
      if (wanted.length === 0) return { items: answer(new Map()), outcome: 'hit', apiCalls: 0 };
      if (!(await ctx.allowed(shop))) return unavailable('no_scope');
      const cached = await rows(
        shop.id,
        wanted.filter((pid) => !unknown.has(UnknownIds.product(shop.id, pid), nowMs())),
      );

      const products: string[] = [];
      const variants = new Map<string, Set<string>>();
      for (const { pid, vid } of ids) {
        if (!pid || isUnknown(pid, vid)) continue;
        const row = cached.get(pid);
        const stale = !row || !fresh(row) || !hasFacts(row);
        if (stale && !products.includes(pid)) products.push(pid);
        if (vid !== null && (stale || (!isMissing(row!) && !row!.variants[vid])))
          variants.set(vid, (variants.get(vid) ?? new Set()).add(pid));
      }
      if (products.length === 0 && variants.size === 0) return { items: answer(cached), outcome: 'hit', apiCalls: 0 };
      // what cannot be asked now is answered from what is cached, stale or not
      const asked = {
        products: products.slice(0, MAX_IDS_PER_CALL),
        variants: new Map([...variants].slice(0, Math.max(0, MAX_IDS_PER_CALL - Math.min(products.length, MAX_IDS_PER_CALL)))),
      };
      if (ctx.cooling.active(shop.id)) return { items: answer(cached), outcome: 'cooling_off', apiCalls: 0 };
      if (ctx.lookupsPerMinute <= 0 || !budget.take(shop.id)) return { items: answer(cached), outcome: 'over_budget', apiCalls: 0 };
      const session = await ctx.session(shop);
      if (!session) return unavailable('no_scope');
      try {
        const calls = await fetchMisses(shop, session, cached, asked.products, asked.variants, deadline);
        const notAsked = new Set(products.slice(MAX_IDS_PER_CALL).filter((pid) => !cached.get(pid) || !hasFacts(cached.get(pid)!)));
        return { items: answer(cached, notAsked), outcome: 'fetched', apiCalls: calls };
      } catch (err) {
        ctx.cooling.start(shop.id);
        const outcome: DescribeOutcome =
          err instanceof AdminThrottledError
            ? 'throttled'
            : err instanceof AdminDeadlineError || Date.now() >= deadline
              ? 'timeout'
              : 'failed';
        ctx.logger.warn(
          {
            shop: shop.domain,
            outcome,
            failure:
              err instanceof Error && !(err instanceof AdminThrottledError || err instanceof AdminDeadlineError)
                ? describeShopifyError(err)
                : (err as Error).message,
          },
          'storefront products unavailable from Shopify',
        );
        return { items: answer(cached), outcome, apiCalls: 0 };
      }
    },
  };
}
