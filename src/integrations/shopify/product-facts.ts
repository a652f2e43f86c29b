// Pure parts of describing a product for storefront events: the browser names ids only, and what
// an event says about the product (titles, SKU, price, currency, page, image) is what Shopify says,
// from the product cache or the Admin API (products.ts, describe). Ids the shop does not have are
// remembered in memory only, bounded: the browser picks them, so none of them is ever written.
import type { CachedProduct } from './product-cache';

/** A product (and variant) as a storefront event names it. */
export interface ProductRef {
  product_id: string;
  variant_id: string | null;
}

/** What Shopify says about a referenced product and variant. */
export interface ProductFacts {
  product_id: string;
  product_title: string | null;
  variant_id: string | null;
  variant_title: string | null;
  sku: string | null;
  price: number | null;
  currency: string | null;
  product_url: string | null;
  image_url: string | null;
  /** Whether the variant can be bought, as Shopify last said; null when unknown (or no variant). */
  available: boolean | null;
}

/**
 * Per reference: its facts; 'unknown' when Shopify has no such product, or the variant is not one
 * of the product's; 'unavailable' when Shopify could not be asked in time (nor answered before).
 */
export type Described = ProductFacts | 'unknown' | 'unavailable';

/** A Shopify id as the pixel sends it (digits, or a gid of that type) as digits; null when it is neither. */
export function numericId(raw: string | null, type: 'Product' | 'ProductVariant'): string | null {
  if (raw === null) return null;
  if (/^\d{1,20}$/.test(raw)) return raw;
  const m = new RegExp(`^gid://shopify/${type}/(\\d{1,20})$`).exec(raw);
  return m ? m[1]! : null;
}

/** A row that can answer for storefront events: it has the product's title (rows cached for images alone do not). */
export const hasFacts = (p: CachedProduct): boolean => p.title !== null || p.handle === null;
/** Shopify said it has no such product (a lookup's answer, cached as such). */
export const isMissing = (p: CachedProduct): boolean => p.handle === null && p.title === null;

/** The facts of a product row for a variant it knows (null variant: the product alone). */
export function factsOf(p: CachedProduct, variantId: string | null): ProductFacts | null {
  const v = variantId === null ? null : p.variants[variantId];
  if (variantId !== null && !v) return null;
  return {
    product_id: p.productId,
    product_title: p.title,
    variant_id: variantId,
    variant_title: v?.title ?? null,
    sku: v?.sku ?? null,
    price: v?.price ?? null,
    currency: p.currency,
    product_url: p.url,
    image_url: (variantId !== null ? p.variantImages[variantId] : null) ?? p.imageUrl,
    available: v?.available ?? null,
  };
}

/**
 * Ids Shopify said a shop does not have (products, and variants not of their product), for `ttlMs`,
 * at most `max` of them (past that the older half is forgotten: a lookup more, never a wrong answer).
 */
export class UnknownIds {
  private readonly until = new Map<string, number>();

  constructor(
    private readonly ttlMs: number,
    private readonly max = 50_000,
  ) {}

  static product = (shopId: string, productId: string) => `${shopId}\u0000p\u0000${productId}`;
  static variant = (shopId: string, productId: string, variantId: string) => `${shopId}\u0000v\u0000${productId}\u0000${variantId}`;

  has(key: string, nowMs: number): boolean {
    const at = this.until.get(key);
    if (at === undefined) return false;
    if (at > nowMs) return true;
    this.until.delete(key);
    return false;
  }

  add(key: string, nowMs: number): void {
    this.until.delete(key);
    this.until.set(key, nowMs + this.ttlMs);
    if (this.until.size > this.max) {
      let drop = this.until.size - Math.floor(this.max / 2);
      for (const k of this.until.keys()) {
        if (drop-- <= 0) break;
        this.until.delete(k);
      }
    }
  }

  /** Forgets a product's entries (a products/update or products/delete told us about it). */
  forgetProduct(shopId: string, productId: string): void {
    this.until.delete(UnknownIds.product(shopId, productId));
  }
}
