// Product images and links for line items. Order and checkout webhooks carry neither,
// so they come from the Admin GraphQL API, cached per shop and product in ProductInfo:
// - a fresh row (younger than the TTL, 24 h by default) answers without any Admin API call;
// - misses and stale rows are looked up together in one nodes(ids:) call (per 250 ids), with the
//   shop's primary domain, within the query cost limits (see admin-graphql.ts);
// - products/update refreshes a cached row from the payload, products/delete removes it;
// - the whole enrich call has a deadline (2 s by default): delivery never waits long. Past it,
//   or on failure, items go without images (a stale row still answers: stale-if-error).
// It needs the optional read_products scope; without it nothing is asked (outcome no_scope).
import type { Db } from '../../db/client';
import type { Logger } from '../../observability/logger';
import type { Metrics } from '../../observability/metrics';
import type { ShopifyApi } from './api';
import { AdminDeadlineError, AdminThrottledError, ThrottleTracker } from './admin-graphql';
import { describeShopifyError } from './errors';
import {
  confirmedVariants,
  domainOfUrl,
  fieldsFor,
  fromLookup,
  fromRow,
  knowsVariant,
  parseProductDelete,
  parseStockChange,
  parseProductUpdate,
  productUrl,
  toRowData,
  type CachedProduct,
  type LineItemLike,
  type ProductFields,
} from './product-cache';
import { createDescriber, type DescribeResult } from './product-describe';
import type { ProductRef } from './product-facts';
import { lookupProducts, type FetchedVariant } from './product-query';
import { FEATURE_SCOPES, hasScopes } from './scopes';
import type { OfflineTokens } from './tokens';

export { withProductFields, type LineItemLike, type ProductFields } from './product-cache';
export type { DescribeResult, DescribeOutcome } from './product-describe';
export type { Described, ProductFacts, ProductRef } from './product-facts';

/**
 * Admin API lookups storefront events may cause per shop and minute, in each worker process, for
 * customers and for products each (products counted in query cost: a lookup of 100 ids is one).
 * 0: only webhooks and the product cache answer.
 */
export const STOREFRONT_LOOKUPS_PER_MINUTE = 10;

export const ENRICH_OUTCOMES = ['hit', 'fetched', 'no_scope', 'timeout', 'throttled', 'failed', 'cooling_off'] as const;
export type EnrichOutcome = (typeof ENRICH_OUTCOMES)[number];

export interface EnrichResult {
  /** One entry per input item, in the same order; null fields when unknown. */
  items: ProductFields[];
  /** hit: all from the cache (or nothing to look up); fetched: some came from the Admin API. */
  outcome: EnrichOutcome;
  durationMs: number;
  /** Admin API calls made by this enrich (0 on a hit). */
  apiCalls: number;
}

/** `stale`: the cache holds newer facts than the update (Shopify delivers webhooks in any order). */
export type ProductUpdateOutcome = 'refreshed' | 'invalidated' | 'not_cached' | 'stale' | 'ignored';

/** A variant price a products/update changed, against the price the cache knew (which a view had looked up, or an earlier update). */
export interface PriceChange {
  productId: string;
  variantId: string;
  before: number;
  after: number;
}

export interface ProductUpdateResult {
  outcome: ProductUpdateOutcome;
  /** Variants whose price changed from a price the cache knew (none when the product was not cached). */
  prices: PriceChange[];
}

/** `scope`, when given: the offline session's scopes as the caller just read them (null: no session). */
export type EnrichShop = { id: string; domain: string; scope?: string | null };

export interface ProductCatalog {
  enrich(shop: EnrichShop, items: readonly LineItemLike[]): Promise<EnrichResult>;
  /** products/update: refreshes a cached row from the payload (no API call); rows not cached stay uncached. */
  onProductUpdate(shopId: string, payload: unknown): Promise<ProductUpdateResult>;
  /**
   * variants/in_stock and variants/out_of_stock: whether the variant can be bought now, kept in its
   * product's row when cached. Returns the variant and product the payload names (null: it names none).
   */
  onStockChange(shopId: string, payload: unknown, available: boolean): Promise<{ productId: string; variantId: string } | null>;
  /** products/delete: removes the row. True when there was one. */
  onProductDelete(shopId: string, payload: unknown): Promise<boolean>;
  /**
   * What Shopify says about products and variants a storefront event names by id (product-describe.ts):
   * facts, 'unknown' or 'unavailable' (not described yet: ask again later) per reference.
   * `deadline`: epoch ms (Date.now) to answer by; a lookup still running then goes on and is cached.
   */
  describe(shop: EnrichShop, refs: readonly ProductRef[], deadline: number): Promise<DescribeResult>;
}

export interface ProductCatalogDeps {
  db: Db;
  shopify: ShopifyApi;
  tokens: Pick<OfflineTokens, 'getOfflineSession'>;
  logger: Logger;
  metrics: Metrics;
  /** How long a row answers without a lookup. Default 24 h. */
  ttlMs?: number;
  /** The most one enrich call takes. Default 2000 ms. */
  deadlineMs?: number;
  /** After a failed lookup, how long a shop's uncached products are not looked up. Default 60 s. */
  coolOffMs?: number;
  /**
   * How long the scopes read with a shop's offline session are trusted before it is read again.
   * Default 60 s: a scope granted or revoked counts within a minute, and a batch of orders does
   * not read and decrypt the session each time (most shops never grant read_products).
   */
  scopeTtlMs?: number;
  /**
   * Admin API lookups storefront events may cause per shop and minute, in this process, counted in
   * query cost: each is worth a lookup of 100 ids, and a call of more ids spends more of it. Default 10.
   */
  storefrontLookupsPerMinute?: number;
  now?: () => Date;
}

const DAY_MS = 24 * 3600 * 1000;

class NoSessionError extends Error {
  constructor() {
    super('the shop has no usable offline token');
    this.name = 'NoSessionError';
  }
}

const unique = (values: Array<string | null>) => [...new Set(values.filter((v): v is string => v !== null))];

export function createProductCatalog(deps: ProductCatalogDeps): ProductCatalog {
  const { db, shopify, tokens, metrics } = deps;
  const logger = deps.logger.child({ component: 'product-images' });
  const ttlMs = deps.ttlMs ?? DAY_MS;
  const deadlineMs = deps.deadlineMs ?? 2000;
  const now = deps.now ?? (() => new Date());
  const throttle = new ThrottleTracker();
  // After a lookup failed, timed out or was throttled, a shop's misses are not looked up for a
  // while (its cached products still answer): stage 2 must not wait out the deadline on every
  // batch while a shop's Admin API is unwell.
  const coolOffMs = deps.coolOffMs ?? 60_000;
  const coolingUntil = new Map<string, number>();
  const scopeTtlMs = deps.scopeTtlMs ?? 60_000;
  /** The scopes each shop's offline session had when last read, and when that was (epoch ms). */
  const scopes = new Map<string, { scope: string | undefined; at: number }>();
  /** Each shop's primary domain, as last reported by the Admin API (for products/update). */
  const domains = new Map<string, { url: string; at: number }>();

  const isFresh = (p: CachedProduct) => now().getTime() - p.fetchedAt.getTime() < ttlMs;
  const knownDomain = (shopId: string) => {
    const d = domains.get(shopId);
    return d && now().getTime() - d.at < ttlMs ? d.url : null;
  };

  interface Progress {
    cached: Map<string, CachedProduct>;
    apiCalls: number;
    /** False when the answer must carry no images (no read_products). */
    usable: boolean;
  }

  /** The shop's offline session; its scopes are remembered for scopeTtlMs. */
  async function sessionOf(shop: { id: string; domain: string }) {
    const session = await tokens.getOfflineSession(shop.domain);
    if (!session) throw new NoSessionError();
    scopes.set(shop.id, { scope: session.scope, at: now().getTime() });
    return session;
  }

  /** The shop's granted scopes: as the caller read them, or read with its offline session at most once per scopeTtlMs. */
  async function grantedScope(shop: EnrichShop): Promise<string | undefined> {
    if (shop.scope === null) throw new NoSessionError();
    if (shop.scope !== undefined) {
      scopes.set(shop.id, { scope: shop.scope, at: now().getTime() });
      return shop.scope;
    }
    const known = scopes.get(shop.id);
    if (known && now().getTime() - known.at < scopeTtlMs) return known.scope;
    return (await sessionOf(shop)).scope;
  }

  const describer = createDescriber({
    db,
    shopify,
    logger,
    ttlMs,
    now,
    throttle,
    lookupsPerMinute: deps.storefrontLookupsPerMinute ?? STOREFRONT_LOOKUPS_PER_MINUTE,
    onCalls: (n) => metrics.pixelAdminCalls.inc({ kind: 'products' }, n),
    allowed: async (shop) => hasScopes(await grantedScope(shop).catch(() => undefined), FEATURE_SCOPES.product_images),
    session: async (shop) => {
      const session = await sessionOf(shop).catch(() => null);
      return session && hasScopes(session.scope, FEATURE_SCOPES.product_images) ? session : null;
    },
    cooling: {
      active: (shopId) => (coolingUntil.get(shopId) ?? 0) > now().getTime(),
      start: (shopId) => void coolingUntil.set(shopId, now().getTime() + coolOffMs),
    },
    domains: { remember: (shopId, url) => void domains.set(shopId, { url, at: now().getTime() }), known: knownDomain },
  });

  async function lookup(
    shop: EnrichShop,
    items: readonly LineItemLike[],
    signal: AbortSignal,
    deadline: number,
    progress: Progress,
  ): Promise<EnrichOutcome> {
    const productIds = unique(items.map((i) => i.product_id));
    if (productIds.length === 0) return 'hit';
    if (!hasScopes(await grantedScope(shop), FEATURE_SCOPES.product_images)) {
      progress.usable = false;
      return 'no_scope';
    }
    const rows = await db.productInfo.findMany({ where: { shopId: shop.id, productId: { in: productIds } } });
    for (const row of rows) progress.cached.set(row.productId, fromRow(row));

    const productMisses = productIds.filter((id) => {
      const p = progress.cached.get(id);
      return !p || !isFresh(p);
    });
    const missSet = new Set(productMisses);
    const productOfVariant = new Map<string, string>();
    for (const item of items) {
      if (!item.product_id || !item.variant_id) continue;
      const p = progress.cached.get(item.product_id);
      if (missSet.has(item.product_id) || (p && !knowsVariant(p, item.variant_id))) productOfVariant.set(item.variant_id, item.product_id);
    }
    if (productMisses.length === 0 && productOfVariant.size === 0) return 'hit';
    if ((coolingUntil.get(shop.id) ?? 0) > now().getTime()) return 'cooling_off';

    // the token only now, for the Admin API: a batch whose products are all cached needs none
    const session = await sessionOf(shop);
    if (!hasScopes(session.scope, FEATURE_SCOPES.product_images)) {
      // revoked since the scopes were last read
      progress.usable = false;
      return 'no_scope';
    }
    const found = await lookupProducts(shopify, session, productMisses, [...productOfVariant.keys()], { signal, deadline, throttle });
    progress.apiCalls += found.calls;
    if (found.primaryDomain) domains.set(shop.id, { url: found.primaryDomain, at: now().getTime() });
    const domain = found.primaryDomain ?? knownDomain(shop.id);
    const at = now();

    const updates: CachedProduct[] = [];
    const variantsOf = new Map<string, Array<[string, FetchedVariant | null]>>();
    for (const [vid, v] of found.variants) {
      const pid = v?.productId ?? productOfVariant.get(vid)!;
      variantsOf.set(pid, [...(variantsOf.get(pid) ?? []), [vid, v]]);
    }
    for (const pid of productMisses)
      updates.push(fromLookup(pid, found.products.get(pid) ?? null, variantsOf.get(pid) ?? [], domain, at, found.currency));
    for (const [pid, variants] of variantsOf) {
      const current = progress.cached.get(pid);
      if (missSet.has(pid) || !current) continue;
      // a fresh row that had not seen this variant: add it, keep the row's age
      updates.push({
        ...current,
        variantImages: { ...current.variantImages, ...Object.fromEntries(variants.map(([vid, v]) => [vid, v?.image ?? null])) },
        variants: { ...current.variants, ...confirmedVariants(pid, variants) },
      });
    }
    for (const u of updates) progress.cached.set(u.productId, u);
    // The answer stands even if the cache write fails (it is only a cache).
    await db
      .$transaction(
        updates.map((u) =>
          db.productInfo.upsert({
            where: { shopId_productId: { shopId: shop.id, productId: u.productId } },
            create: { shopId: shop.id, productId: u.productId, ...toRowData(u) },
            update: toRowData(u),
          }),
        ),
      )
      .catch((err: unknown) => logger.warn({ shop: shop.domain, err: (err as Error)?.name }, 'could not cache product images'));
    return 'fetched';
  }

  function failureOutcome(err: unknown, signal: AbortSignal): EnrichOutcome {
    if (err instanceof AdminThrottledError) return 'throttled';
    if (err instanceof AdminDeadlineError || signal.aborted) return 'timeout';
    return 'failed';
  }

  return {
    async enrich(shop, items) {
      const started = Date.now();
      const progress: Progress = { cached: new Map(), apiCalls: 0, usable: true };
      const controller = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          controller.abort();
          reject(new AdminDeadlineError());
        }, deadlineMs);
      });
      expired.catch(() => undefined);
      const work = lookup(shop, items, controller.signal, started + deadlineMs, progress);
      work.catch(() => undefined); // it may lose the race and fail later
      let outcome: EnrichOutcome;
      try {
        outcome = await Promise.race([work, expired]);
      } catch (err) {
        outcome = failureOutcome(err, controller.signal);
        coolingUntil.set(shop.id, now().getTime() + coolOffMs);
        const failure =
          err instanceof AdminThrottledError || err instanceof AdminDeadlineError || err instanceof NoSessionError
            ? err.message
            : describeShopifyError(err);
        logger.warn(
          { shop: shop.domain, outcome, failure, items: items.length, ms: Date.now() - started },
          'product images unavailable; the event goes without them',
        );
      } finally {
        clearTimeout(timer);
      }
      const fields = items.map((item) =>
        progress.usable && item.product_id ? fieldsFor(progress.cached.get(item.product_id), item.variant_id) : fieldsFor(undefined, null),
      );
      const durationMs = Date.now() - started;
      metrics.enrichment.inc({ outcome });
      if (outcome === 'hit' || outcome === 'fetched' || outcome === 'no_scope') {
        logger.debug({ shop: shop.domain, outcome, items: items.length, apiCalls: progress.apiCalls, ms: durationMs }, 'product images');
      }
      return { items: fields, outcome, durationMs, apiCalls: progress.apiCalls };
    },

    describe: (shop, refs, deadline) => describer.describe(shop, refs, deadline),

    async onProductUpdate(shopId, payload) {
      const update = parseProductUpdate(payload);
      const changed = update?.productId ?? parseProductDelete(payload);
      if (changed) describer.forget(shopId, changed);
      const none = (outcome: ProductUpdateOutcome): ProductUpdateResult => ({ outcome, prices: [] });
      if (!update) {
        // not enough to refresh from: forget the row, the next order looks it up
        const productId = parseProductDelete(payload);
        if (!productId) return none('ignored');
        const { count } = await db.productInfo.deleteMany({ where: { shopId, productId } });
        return none(count > 0 ? 'invalidated' : 'not_cached');
      }
      const where = { shopId_productId: { shopId, productId: update.productId } };
      const row = await db.productInfo.findUnique({ where });
      if (!row) return none('not_cached');
      // a row's fetchedAt is when its facts were true: an update of before it is older news
      if (update.updatedAt && update.updatedAt < row.fetchedAt) return none('stale');
      const cached = fromRow(row);
      let domain = knownDomain(shopId) ?? domainOfUrl(row.url);
      if (!domain && update.onOnlineStore) {
        const other = await db.productInfo.findFirst({ where: { shopId, url: { not: null } }, select: { url: true } });
        domain = domainOfUrl(other?.url);
      }
      if (!domain && update.onOnlineStore) {
        await db.productInfo.deleteMany({ where: { shopId, productId: update.productId } });
        return none('invalidated');
      }
      // a payload that does not say whether a variant can be bought keeps what the row knew
      const variants = Object.fromEntries(
        Object.entries(update.variants).map(([vid, v]) => [
          vid,
          { ...v, available: v.available ?? cached.variants[vid]?.available ?? null },
        ]),
      );
      const data = toRowData({
        productId: update.productId,
        handle: update.handle,
        title: update.title,
        // not in the payload: the shop's currency as the last lookup said
        currency: row.currency,
        url: productUrl(domain, update.handle, update.onOnlineStore),
        imageUrl: update.imageUrl,
        variantImages: update.variantImages,
        variants,
        // as of the update (not now), so an older update that arrives later is known as such
        fetchedAt: update.updatedAt ?? now(),
      });
      const { count } = await db.productInfo.updateMany({ where: { shopId, productId: update.productId }, data });
      const prices: PriceChange[] = [];
      for (const [variantId, v] of Object.entries(update.variants)) {
        const before = cached.variants[variantId]?.price ?? null;
        if (before !== null && v.price !== null && before !== v.price)
          prices.push({ productId: update.productId, variantId, before, after: v.price });
      }
      return count > 0 ? { outcome: 'refreshed', prices } : none('not_cached');
    },

    async onStockChange(shopId, payload, available) {
      const stock = parseStockChange(payload);
      if (!stock) return null;
      describer.forget(shopId, stock.productId);
      const row = await db.productInfo.findUnique({ where: { shopId_productId: { shopId, productId: stock.productId } } });
      const cached = row ? fromRow(row) : null;
      const v = cached?.variants[stock.variantId];
      if (cached && v && v.available !== available) {
        const variants = { ...cached.variants, [stock.variantId]: { ...v, available } };
        await db.productInfo.updateMany({
          where: { shopId, productId: stock.productId },
          data: { variants: JSON.stringify(variants) },
        });
      }
      return stock;
    },

    async onProductDelete(shopId, payload) {
      const productId = parseProductDelete(payload);
      if (!productId) return false;
      describer.forget(shopId, productId);
      const { count } = await db.productInfo.deleteMany({ where: { shopId, productId } });
      return count > 0;
    },
  };
}
