// What a storefront event says about a product or a cart line, as we store and send it: ids,
// titles, price, currency, and absolute product and image URLs without query strings or
// fragments (a storefront URL may carry personal data in them: emails in UTM tags, tokens).
import { createHash } from 'node:crypto';
import { str } from '../mapping/read';

export interface ProductItem {
  product_id: string;
  product_title: string | null;
  variant_id: string | null;
  variant_title: string | null;
  sku: string | null;
  price: number | null;
  currency: string | null;
  product_url: string | null;
  image_url: string | null;
}

export interface CartItem extends ProductItem {
  quantity: number;
  /** The cart line's total as Shopify gives it (price × quantity, after line discounts). */
  line_total: number | null;
}

export const MAX_URL_LENGTH = 2048;

/**
 * An absolute http(s) URL with no query string, fragment or credentials, or null. Relative URLs
 * resolve against `base` (the page's URL); protocol-relative ones (Shopify's CDN images) get https.
 */
export function cleanUrl(raw: string | null | undefined, base?: string | null): string | null {
  const s = str(raw);
  if (s === null) return null;
  let u: URL;
  try {
    u = base ? new URL(s, base) : new URL(s.startsWith('//') ? `https:${s}` : s);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  // no credentials, query or fragment: the href from its parts (four setters, each of which
  // re-serialises the URL, took 6% of stage 2's CPU on storefront batches)
  const href = `${u.protocol}//${u.host}${u.pathname}`;
  return href.length <= MAX_URL_LENGTH ? href : null;
}

/** A short, stable digest for derived source ids (no personal data in them, and bounded length). */
export function digest(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('base64url').slice(0, 22);
}

interface VariantIn {
  id?: string;
  title?: string;
  sku?: string;
  price?: { amount?: number; currencyCode?: string };
  image?: { src?: string };
  product: { id: string; title?: string; url?: string };
}

/** A product item from a validated productVariant, its URLs made absolute against the page's. */
export function productItem(v: VariantIn, pageUrl: string | null): ProductItem {
  const price = v.price?.amount;
  return {
    product_id: v.product.id,
    product_title: str(v.product.title),
    variant_id: str(v.id),
    variant_title: str(v.title),
    sku: str(v.sku),
    price: typeof price === 'number' ? price : null,
    currency: str(v.price?.currencyCode),
    product_url: cleanUrl(v.product.url, pageUrl),
    image_url: cleanUrl(v.image?.src, pageUrl),
  };
}

/** Money sums in micro-units, so 0.1 + 0.2 is 0.3. */
export function sum(values: Array<number | null>): number {
  return values.reduce<number>((acc, v) => acc + Math.round((v ?? 0) * 1e6), 0) / 1e6;
}
