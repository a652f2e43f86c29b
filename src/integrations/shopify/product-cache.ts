// Pure parts of the product cache: ProductInfo rows ↔ what line items and storefront events get,
// rows built from an Admin API lookup or from a products/update webhook, and the merge into line
// items.
import { parseWebhookBody } from '../../mapping/parse';
import { money, id as readId, obj, objs, str, type Obj } from '../../mapping/read';
import type { FetchedProduct, FetchedVariant } from './product-query';

/** What a line item needs: product_id and variant_id as exact decimal strings (ids exceed 2^53). */
export interface LineItemLike {
  product_id: string | null;
  variant_id: string | null;
}

/** The three fields added to every line item; null when unknown. */
export interface ProductFields {
  image_url: string | null;
  product_url: string | null;
  product_handle: string | null;
}

export const NO_PRODUCT_FIELDS: Readonly<ProductFields> = Object.freeze({ image_url: null, product_url: null, product_handle: null });

/** Adds image_url, product_url and product_handle to each line item (same order as `fields`). */
export function withProductFields<T extends LineItemLike>(items: readonly T[], fields: readonly ProductFields[]): Array<T & ProductFields> {
  return items.map((item, i) => ({ ...item, ...(fields[i] ?? NO_PRODUCT_FIELDS) }));
}

/** What Shopify says about one variant of a product (only variants it confirmed belong to it). */
export interface VariantFacts {
  title: string | null;
  sku: string | null;
  /** In the shop's currency. */
  price: number | null;
  /**
   * Whether a shopper can buy it, as Shopify last said (a lookup's availableForSale, a products/update
   * payload's inventory, variants/in_stock and variants/out_of_stock); null when unknown.
   */
  available: boolean | null;
}

/**
 * A ProductInfo row, with its maps parsed. In variantImages a variant mapped to null is known to
 * have no image of its own; `variants` holds only variants Shopify confirmed.
 */
export interface CachedProduct {
  productId: string;
  handle: string | null;
  title: string | null;
  currency: string | null;
  url: string | null;
  imageUrl: string | null;
  variantImages: Record<string, string | null>;
  variants: Record<string, VariantFacts>;
  fetchedAt: Date;
}

export interface ProductInfoRow {
  productId: string;
  handle: string | null;
  title: string | null;
  currency: string | null;
  url: string | null;
  imageUrl: string | null;
  variantImages: string;
  variants: string;
  fetchedAt: Date;
}

function parseMap<T>(raw: string, item: (v: unknown) => T | undefined): Record<string, T> {
  const out: Record<string, T> = {};
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
        const t = item(v);
        if (t !== undefined) out[k] = t;
      }
    }
  } catch {
    // an unreadable map only costs a lookup
  }
  return out;
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);

function variantFacts(v: unknown): VariantFacts | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  return {
    title: text(o.title),
    sku: text(o.sku),
    price: typeof o.price === 'number' && Number.isFinite(o.price) ? o.price : null,
    available: typeof o.available === 'boolean' ? o.available : null,
  };
}

export function fromRow(row: ProductInfoRow): CachedProduct {
  return {
    productId: row.productId,
    handle: row.handle,
    title: row.title,
    currency: row.currency,
    url: row.url,
    imageUrl: row.imageUrl,
    variantImages: parseMap(row.variantImages, text),
    variants: parseMap(row.variants, variantFacts),
    fetchedAt: row.fetchedAt,
  };
}

export function toRowData(p: CachedProduct) {
  return {
    handle: p.handle,
    title: p.title,
    currency: p.currency,
    url: p.url,
    imageUrl: p.imageUrl,
    variantImages: JSON.stringify(p.variantImages),
    variants: JSON.stringify(p.variants),
    fetchedAt: p.fetchedAt,
  };
}

/** Whether the row answers this variant: a variant never looked up needs a lookup (it may have its own image). */
export const knowsVariant = (p: CachedProduct, variantId: string | null) =>
  variantId === null || Object.prototype.hasOwnProperty.call(p.variantImages, variantId);

/** The variant's image, else the product's featured image. */
export function fieldsFor(p: CachedProduct | undefined, variantId: string | null): ProductFields {
  if (!p) return { ...NO_PRODUCT_FIELDS };
  const own = variantId !== null ? p.variantImages[variantId] : null;
  return { image_url: own ?? p.imageUrl, product_url: p.url, product_handle: p.handle };
}

/** `<primary domain>/products/<handle>`, only for a product on the Online Store. */
export function productUrl(primaryDomain: string | null, handle: string | null, onOnlineStore: boolean): string | null {
  if (!primaryDomain || !handle || !onOnlineStore) return null;
  return `${primaryDomain.replace(/\/+$/, '')}/products/${encodeURIComponent(handle)}`;
}

/** The origin of a stored product URL (the primary domain it was built on). */
export function domainOfUrl(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/** The facts of the variants Shopify confirmed belong to `productId`. */
export function confirmedVariants(productId: string, variants: Array<[string, FetchedVariant | null]>): Record<string, VariantFacts> {
  const out: Record<string, VariantFacts> = {};
  for (const [vid, v] of variants)
    if (v && v.productId === productId) out[vid] = { title: v.title, sku: v.sku, price: v.price, available: v.available };
  return out;
}

/** A cache entry from an Admin API lookup (product null: Shopify has no such product, cached as such). */
export function fromLookup(
  productId: string,
  product: FetchedProduct | null,
  variants: Array<[string, FetchedVariant | null]>,
  primaryDomain: string | null,
  at: Date,
  currency: string | null = null,
): CachedProduct {
  return {
    productId,
    handle: product?.handle ?? null,
    title: product?.title ?? null,
    currency: product ? currency : null,
    url: product ? productUrl(primaryDomain, product.handle, product.onlineStoreUrl !== null) : null,
    imageUrl: product?.featuredImage ?? null,
    variantImages: Object.fromEntries(variants.map(([vid, v]) => [vid, v?.image ?? null])),
    variants: product ? confirmedVariants(productId, variants) : {},
    fetchedAt: at,
  };
}

// --- products/update and products/delete payloads ------------------------------------------

export interface ProductUpdate {
  productId: string;
  handle: string;
  title: string | null;
  /** Active and published on the Online Store: it has a product page. */
  onOnlineStore: boolean;
  imageUrl: string | null;
  variantImages: Record<string, string | null>;
  /** Every variant of the payload, with its title, SKU and price. */
  variants: Record<string, VariantFacts>;
  /** When Shopify changed the product (its updated_at): an older update never replaces newer facts. */
  updatedAt: Date | null;
}

function payloadObject(payload: unknown): Obj | null {
  if (typeof payload === 'string') {
    try {
      return obj(parseWebhookBody(payload));
    } catch {
      return null;
    }
  }
  return obj(payload);
}

/**
 * Whether a REST variant (products/update, variants/in_stock) can be bought: stock left, stock not
 * tracked, or sold past zero by the merchant's policy. Null when the payload does not say.
 */
export function restAvailable(v: Obj): boolean | null {
  if (!('inventory_quantity' in v) && !('inventory_management' in v)) return null;
  if (v.inventory_management === null || str(v.inventory_policy) === 'continue') return true;
  const q = typeof v.inventory_quantity === 'number' ? v.inventory_quantity : Number(str(v.inventory_quantity) ?? NaN);
  return Number.isFinite(q) ? q > 0 : null;
}

/**
 * What a products/update payload says about the product's images and page. Null when it lacks
 * what the cache needs (id, handle, the variants and the images), so the caller invalidates.
 */
export function parseProductUpdate(payload: unknown): ProductUpdate | null {
  const p = payloadObject(payload);
  const productId = p && readId(p.id);
  const handle = p && str(p.handle);
  if (!p || !productId || !handle || !Array.isArray(p.variants) || (!Array.isArray(p.images) && !('image' in p))) return null;
  const images = objs(p.images);
  const srcById = new Map<string, string>();
  for (const img of images) {
    const imgId = readId(img.id);
    const src = str(img.src);
    if (imgId && src) srcById.set(imgId, src);
  }
  const byPosition = [...images].sort((a, b) => (Number(a.position) || 0) - (Number(b.position) || 0));
  const featured = str(obj(p.image)?.src) ?? str(byPosition[0]?.src) ?? null;
  const variantImages: Record<string, string | null> = {};
  const variants: Record<string, VariantFacts> = {};
  for (const v of objs(p.variants)) {
    const vid = readId(v.id);
    if (!vid) continue;
    const imageId = readId(v.image_id);
    variantImages[vid] = imageId ? (srcById.get(imageId) ?? null) : null;
    variants[vid] = { title: str(v.title), sku: str(v.sku), price: money(v.price), available: restAvailable(v) };
  }
  const status = str(p.status);
  const published = !('published_at' in p) || str(p.published_at) !== null;
  const updated = Date.parse(str(p.updated_at) ?? '');
  return {
    productId,
    handle,
    title: str(p.title),
    onOnlineStore: (status === null || status === 'active') && published,
    imageUrl: featured,
    variantImages,
    variants,
    updatedAt: Number.isNaN(updated) ? null : new Date(updated),
  };
}

/** The variant and product a variants/in_stock or variants/out_of_stock payload (a REST variant) names. */
export function parseStockChange(payload: unknown): { productId: string; variantId: string } | null {
  const p = payloadObject(payload);
  const gid = str(p?.admin_graphql_api_id);
  const fromGid = gid ? /^gid:\/\/shopify\/ProductVariant\/(\d+)$/.exec(gid)?.[1] : undefined;
  const variantId = fromGid ?? (p ? readId(p.id) : null);
  const productId = p ? readId(p.product_id) : null;
  return variantId && productId ? { productId, variantId } : null;
}

/** The product id of a products/delete payload (`{id}`). */
export function parseProductDelete(payload: unknown): string | null {
  const p = payloadObject(payload);
  return p ? readId(p.id) : null;
}
