// Whether a shop sells a variant, from the Admin API (read_products): one `productVariant(id:)`
// call giving its product and whether it can be bought now. What the storefront's notify-me form
// names is the browser's claim; a subscription is stored only for a variant Shopify confirms.
// Answers are remembered in this process for a short while (a sold-out variant, or none), so a
// popular sold-out product costs one call a minute, not one per shopper.
import type { Logger } from '../../observability/logger';
import type { ShopifyApi } from './api';
import { adminRequest, ThrottleTracker } from './admin-graphql';
import { lookUp, type LookupUnanswered } from './admin-lookup';
import type { OfflineTokens } from './tokens';

/** `gid://shopify/<type>/123` → `123` (exact: never through a JS number); null when it is not one. */
const idOf = (gid: unknown, type: string): string | null => {
  const m = typeof gid === 'string' ? /^gid:\/\/shopify\/([A-Za-z]+)\/(\d+)$/.exec(gid) : null;
  return m && m[1] === type ? m[2]! : null;
};

export const VARIANT_QUERY = `#graphql
  query NotifyMeVariant($id: ID!) {
    productVariant(id: $id) {
      id
      title
      price
      availableForSale
      product { id title }
    }
  }`;

/** About what Shopify's cost model charges for the query above. */
const EXPECTED_COST = 2;

export interface ShopVariant {
  variantId: string;
  productId: string;
  title: string | null;
  productTitle: string | null;
  /** Whether a shopper can buy it now (in stock, or sold past zero by the merchant's policy). */
  availableForSale: boolean;
  /** Its price now, in the shop's currency; null when Shopify did not say. */
  price: number | null;
}

export type VariantUnavailable = LookupUnanswered;

export type VariantLookupResult =
  | { kind: 'found'; variant: ShopVariant }
  /** Shopify has no such variant in this shop. */
  | { kind: 'unknown' }
  /** Shopify could not be asked, or did not answer in time: nothing is known. */
  | { kind: 'unavailable'; reason: VariantUnavailable };

export interface VariantLookup {
  /**
   * `variantId` numeric; `deadline` epoch ms (Date.now) to answer by. `fresh`: ask Shopify even when
   * an answer is remembered (a restock must read the stock as it is now). Never throws.
   */
  find(shop: { id: string; domain: string }, variantId: string, deadline: number, opts?: { fresh?: boolean }): Promise<VariantLookupResult>;
}

export interface VariantLookupDeps {
  shopify: ShopifyApi;
  tokens: Pick<OfflineTokens, 'getOfflineSession'>;
  logger: Logger;
  /** Takes one of the shop's Admin API calls for storefront requests; false: none left now (over_budget). */
  budget?: (shopId: string) => boolean;
  /** How long an answer is reused. Default 60 s. */
  memoMs?: number;
  nowMs?: () => number;
}

interface Data {
  productVariant?: {
    id?: unknown;
    title?: unknown;
    price?: unknown;
    availableForSale?: unknown;
    product?: { id?: unknown; title?: unknown } | null;
  } | null;
}

/** A Money scalar ("18.50", or a number) as a number; null when it is not one. */
const money = (v: unknown): number | null => {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(v) ? Number(v) : NaN;
  return Number.isFinite(n) ? n : null;
};

const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);

/** The answer to VARIANT_QUERY for `variantId`: found, or unknown when Shopify returned no such variant. */
export function parseVariant(variantId: string, data: Data | undefined): VariantLookupResult {
  const v = data?.productVariant;
  const productId = idOf(v?.product?.id, 'Product');
  if (!v || idOf(v.id, 'ProductVariant') !== variantId || !productId) return { kind: 'unknown' };
  return {
    kind: 'found',
    variant: {
      variantId,
      productId,
      title: text(v.title),
      productTitle: text(v.product?.title),
      availableForSale: v.availableForSale === true,
      price: money(v.price),
    },
  };
}

const MEMO_MAX = 20_000;

export function createVariantLookup(deps: VariantLookupDeps): VariantLookup {
  const logger = deps.logger.child({ component: 'variant-lookup' });
  const memoMs = deps.memoMs ?? 60_000;
  const nowMs = deps.nowMs ?? Date.now;
  const throttle = new ThrottleTracker();
  const memo = new Map<string, { result: VariantLookupResult; until: number }>();

  function remember(key: string, result: VariantLookupResult): void {
    memo.delete(key);
    memo.set(key, { result, until: nowMs() + memoMs });
    if (memo.size > MEMO_MAX)
      for (const k of memo.keys()) {
        if (memo.size <= MEMO_MAX / 2) break;
        memo.delete(k);
      }
  }

  return {
    async find(shop, variantId, deadline, opts = {}) {
      const key = `${shop.id}\u0000${variantId}`;
      const hit = opts.fresh ? undefined : memo.get(key);
      if (hit && hit.until > nowMs()) return hit.result;
      const res = await lookUp(
        { ...deps, logger },
        shop,
        ['read_products'],
        deadline,
        'variant lookup unanswered; the notify-me request is refused for now',
        (session, signal) =>
          adminRequest<Data>(deps.shopify, session, VARIANT_QUERY, {
            variables: { id: `gid://shopify/ProductVariant/${variantId}` },
            signal,
            deadline,
            throttle,
            expectedCost: EXPECTED_COST,
          }),
      );
      if (!res.ok) return { kind: 'unavailable', reason: res.reason };
      const result = parseVariant(variantId, res.value.data);
      // a variant on sale is asked again next time: the form shows only for sold-out ones, so one
      // that was on sale a moment ago has just sold out, and the shopper must not be told otherwise
      if (result.kind === 'unknown' || (result.kind === 'found' && !result.variant.availableForSale)) remember(key, result);
      return result;
    },
  };
}
