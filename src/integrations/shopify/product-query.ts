// The Admin GraphQL lookup behind product images and storefront events: one `nodes(ids:)` call for
// every Product and ProductVariant a batch needs (handles, titles, images, variant titles, SKUs,
// prices and whether each can be bought), plus the shop's primary domain and currency.
import type { Session } from '@shopify/shopify-api';
import type { ShopifyApi } from './api';
import { adminRequest, type AdminResult, type ThrottleTracker } from './admin-graphql';

/** Shopify accepts at most 250 ids in one nodes(ids:) call. */
export const MAX_NODES_PER_CALL = 250;

export const PRODUCT_IMAGES_QUERY = `#graphql
  query ProductImages($ids: [ID!]!) {
    shop { primaryDomain { url } currencyCode }
    nodes(ids: $ids) {
      __typename
      ... on Product { id handle title onlineStoreUrl featuredImage { url } }
      ... on ProductVariant { id title sku price availableForSale image { url } product { id } }
    }
  }`;

/** A rough requested cost (1 per object, per the cost model), for holding back a call that would be throttled. */
export const expectedLookupCost = (ids: number) => 2 + ids * 2;

export const productGid = (id: string) => `gid://shopify/Product/${id}`;
export const variantGid = (id: string) => `gid://shopify/ProductVariant/${id}`;

/** `gid://shopify/Product/123` → `123` (exact: never through a JS number). */
export function gidNumber(gid: unknown): string | null {
  if (typeof gid !== 'string') return null;
  const m = /^gid:\/\/shopify\/[A-Za-z]+\/(\d+)$/.exec(gid);
  return m ? m[1]! : null;
}

export interface FetchedProduct {
  handle: string | null;
  title: string | null;
  /** Null when the product is not on the Online Store (no product page to link to). */
  onlineStoreUrl: string | null;
  featuredImage: string | null;
}

export interface FetchedVariant {
  productId: string | null;
  image: string | null;
  title: string | null;
  sku: string | null;
  /** The price in the shop's currency (Shopify's Money scalar, a decimal string). */
  price: number | null;
  /** Whether a shopper can buy it now; null when Shopify did not say. */
  available: boolean | null;
}

export interface ProductLookup {
  /** `https://shop.example` (no trailing slash), or null when Shopify did not say. */
  primaryDomain: string | null;
  /** The shop's currency (ISO 4217), or null when Shopify did not say. */
  currency: string | null;
  /** Every requested product id: its data, or null when Shopify has no such product. */
  products: Map<string, FetchedProduct | null>;
  /** Every requested variant id: its data, or null when Shopify has no such variant. */
  variants: Map<string, FetchedVariant | null>;
}

interface QueryData {
  shop?: { primaryDomain?: { url?: unknown } | null; currencyCode?: unknown } | null;
  nodes?: Array<Record<string, unknown> | null> | null;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);
const urlOf = (v: unknown): string | null => str((v as { url?: unknown } | null | undefined)?.url);
/** A Money scalar ("18.50", or a number in older answers) as a number; null when not one. */
function price(v: unknown): number | null {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(v) ? Number(v) : NaN;
  return Number.isFinite(n) ? n : null;
}

export function parseLookup(productIds: readonly string[], variantIds: readonly string[], data: QueryData | undefined): ProductLookup {
  const products = new Map<string, FetchedProduct | null>(productIds.map((id) => [id, null]));
  const variants = new Map<string, FetchedVariant | null>(variantIds.map((id) => [id, null]));
  for (const node of data?.nodes ?? []) {
    if (!node) continue;
    const id = gidNumber(node.id);
    if (!id) continue;
    if (node.__typename === 'Product' && products.has(id)) {
      products.set(id, {
        handle: str(node.handle),
        title: str(node.title),
        onlineStoreUrl: str(node.onlineStoreUrl),
        featuredImage: urlOf(node.featuredImage),
      });
    } else if (node.__typename === 'ProductVariant' && variants.has(id)) {
      variants.set(id, {
        productId: gidNumber((node.product as { id?: unknown } | null)?.id),
        image: urlOf(node.image),
        title: str(node.title),
        sku: str(node.sku),
        price: price(node.price),
        available: typeof node.availableForSale === 'boolean' ? node.availableForSale : null,
      });
    }
  }
  const domain = urlOf(data?.shop?.primaryDomain);
  const currency = str(data?.shop?.currencyCode);
  return {
    primaryDomain: domain ? domain.replace(/\/+$/, '') : null,
    currency: currency && /^[A-Z]{3}$/.test(currency) ? currency : null,
    products,
    variants,
  };
}

export interface LookupOptions {
  signal?: AbortSignal;
  deadline?: number;
  throttle?: ThrottleTracker;
}

/**
 * Looks up products and variants in as few calls as possible (one per 250 ids). Throws like
 * adminRequest (AdminThrottledError, AdminDeadlineError, the library's errors).
 */
export async function lookupProducts(
  shopify: ShopifyApi,
  session: Session,
  productIds: readonly string[],
  variantIds: readonly string[],
  opts: LookupOptions = {},
): Promise<ProductLookup & { calls: number; throttledRetries: number }> {
  const ids = [...productIds.map(productGid), ...variantIds.map(variantGid)];
  const merged: ProductLookup = { primaryDomain: null, currency: null, products: new Map(), variants: new Map() };
  let calls = 0;
  let throttledRetries = 0;
  for (let i = 0; i < ids.length || (i === 0 && ids.length === 0); i += MAX_NODES_PER_CALL) {
    const chunk = ids.slice(i, i + MAX_NODES_PER_CALL);
    const res: AdminResult<QueryData> = await adminRequest<QueryData>(shopify, session, PRODUCT_IMAGES_QUERY, {
      variables: { ids: chunk },
      signal: opts.signal,
      deadline: opts.deadline,
      throttle: opts.throttle,
      expectedCost: expectedLookupCost(chunk.length),
    });
    calls++;
    throttledRetries += res.throttledRetries;
    const inChunk = new Set(chunk);
    const part = parseLookup(
      productIds.filter((id) => inChunk.has(productGid(id))),
      variantIds.filter((id) => inChunk.has(variantGid(id))),
      res.data,
    );
    merged.primaryDomain ??= part.primaryDomain;
    merged.currency ??= part.currency;
    for (const [k, v] of part.products) merged.products.set(k, v);
    for (const [k, v] of part.variants) merged.variants.set(k, v);
    if (ids.length === 0) break;
  }
  return { ...merged, calls, throttledRetries };
}
