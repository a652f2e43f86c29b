// The fake shop's inventory: a quantity per shop and variant (every variant starts with
// DEFAULT_QUANTITY, the sandbox storefront's small Merino Socks with none), the Admin API's
// `productVariant(id:)` (title, price, availableForSale, product) behind read_products and the cost
// bucket, and the webhooks Shopify sends when stock changes: `variants/in_stock` or
// `variants/out_of_stock` with the REST variant (as in Shopify's 2026-04 example), and
// `products/update` with the product and its variants.
import type { FakeCatalog, FakeProductInit, FakeVariantInit } from './catalog';
import { accessDenied, grants, type CostBuckets } from './cost';
import type { GraphqlHandler } from './graphql';
import type { FakeShopState } from './state';

export const DEFAULT_QUANTITY = 10;
/** Variants that start sold out: the sandbox storefront's Merino Socks, small. */
export const SOLD_OUT_AT_START: ReadonlySet<string> = new Set(['45105']);

export interface StockWebhook {
  topic: 'variants/in_stock' | 'variants/out_of_stock' | 'products/update';
  payload: unknown;
}

export interface StockChange {
  variantId: string;
  previous: number;
  quantity: number;
  /** What Shopify would send the app for this change, in order (sendWebhook each). */
  webhooks: StockWebhook[];
}

export class FakeStock {
  private readonly byShop = new Map<string, Map<string, number>>();

  quantity(shop: string, variantId: string): number {
    return this.byShop.get(shop)?.get(variantId) ?? (SOLD_OUT_AT_START.has(variantId) ? 0 : DEFAULT_QUANTITY);
  }

  available(shop: string, variantId: string): boolean {
    return this.quantity(shop, variantId) > 0;
  }

  /** Sets the quantity; returns the one before. */
  set(shop: string, variantId: string, quantity: number): number {
    const previous = this.quantity(shop, variantId);
    let m = this.byShop.get(shop);
    if (!m) this.byShop.set(shop, (m = new Map()));
    m.set(variantId, quantity);
    return previous;
  }
}

const gid = (type: string, id: string) => `gid://shopify/${type}/${id}`;
/** Ids as Shopify's REST payloads write them: numbers (those of the sandbox stay below 2^53). */
const num = (id: string) => Number(id);

/** A REST variant, as variants/in_stock and variants/out_of_stock carry it (and products/update's variants). */
export function restVariant(
  product: FakeProductInit,
  variant: FakeVariantInit,
  position: number,
  quantity: number,
  oldQuantity: number,
  at: Date,
): Record<string, unknown> {
  const title = variant.title ?? 'Default Title';
  return {
    id: num(variant.id),
    product_id: num(product.id),
    title,
    price: (variant.price ?? 10).toFixed(2),
    position,
    inventory_policy: 'deny',
    compare_at_price: null,
    option1: title,
    option2: null,
    option3: null,
    created_at: '2026-01-05T10:00:00-05:00',
    updated_at: at.toISOString(),
    taxable: true,
    barcode: null,
    sku: variant.sku ?? null,
    inventory_item_id: num(variant.id) + 1_000_000,
    inventory_quantity: quantity,
    old_inventory_quantity: oldQuantity,
    admin_graphql_api_id: gid('ProductVariant', variant.id),
    image_id: null,
  };
}

/** products/update's payload for the product, with every variant's stock now. */
export function productUpdate(product: FakeProductInit, quantityOf: (variantId: string) => number, at: Date): Record<string, unknown> {
  const variants = product.variants ?? [];
  return {
    admin_graphql_api_id: gid('Product', product.id),
    body_html: null,
    created_at: '2026-01-05T10:00:00-05:00',
    handle: product.handle,
    id: num(product.id),
    product_type: '',
    published_at: product.published === false ? null : '2026-01-05T10:00:00-05:00',
    template_suffix: null,
    title: product.title ?? product.handle,
    updated_at: at.toISOString(),
    vendor: 'Demo Store',
    status: 'active',
    published_scope: 'web',
    tags: '',
    variants: variants.map((v, i) => {
      const q = quantityOf(v.id);
      return restVariant(product, v, i + 1, q, q, at);
    }),
    options: [],
    images: [],
    image: null,
    media: [],
    variant_gids: variants.map((v) => ({ admin_graphql_api_id: gid('ProductVariant', v.id), updated_at: at.toISOString() })),
    has_variants_that_requires_components: false,
    category: null,
  };
}

/** Sets a variant's stock and says what Shopify would send: in_stock or out_of_stock when it crossed zero, then products/update. */
export function changeStock(
  shop: string,
  catalog: FakeCatalog,
  stock: FakeStock,
  variantId: string,
  quantity: number,
  at = new Date(),
): StockChange | null {
  const found = catalog.variant(shop, variantId);
  if (!found) return null;
  const previous = stock.set(shop, variantId, quantity);
  const position = (found.product.variants ?? []).findIndex((v) => v.id === variantId) + 1;
  const webhooks: StockWebhook[] = [];
  if (previous <= 0 && quantity > 0)
    webhooks.push({ topic: 'variants/in_stock', payload: restVariant(found.product, found.variant, position, quantity, previous, at) });
  if (previous > 0 && quantity <= 0)
    webhooks.push({ topic: 'variants/out_of_stock', payload: restVariant(found.product, found.variant, position, quantity, previous, at) });
  webhooks.push({ topic: 'products/update', payload: productUpdate(found.product, (id) => stock.quantity(shop, id), at) });
  return { variantId, previous, quantity, webhooks };
}

/**
 * Sets a variant's price, as the merchant would; returns the products/update Shopify would send
 * the app. Null for a variant the shop does not have.
 */
export function changePrice(
  shop: string,
  catalog: FakeCatalog,
  stock: FakeStock,
  variantId: string,
  price: number,
  at = new Date(),
): StockWebhook | null {
  const found = catalog.variant(shop, variantId);
  if (!found) return null;
  found.variant.price = price;
  return { topic: 'products/update', payload: productUpdate(found.product, (id) => stock.quantity(shop, id), at) };
}

const VARIANT_GID = /^gid:\/\/shopify\/ProductVariant\/(\d+)$/;

/** Admin GraphQL `productVariant(id:)`: null for a variant the shop does not have. */
export function variantHandler(state: FakeShopState, catalog: FakeCatalog, stock: FakeStock, costs: CostBuckets): GraphqlHandler {
  return ({ shop, query, variables }) => {
    if (!/\bproductVariant\s*\(/.test(query)) return undefined;
    if (!grants(state.scopesOf(shop.domain), 'read_products')) return accessDenied('productVariant', 'read_products');
    const m = VARIANT_GID.exec(String(variables.id ?? ''));
    const found = m ? catalog.variant(shop.domain, m[1]!) : undefined;
    return costs.charge(shop.domain, 2, () => ({
      data: {
        productVariant: found
          ? {
              id: gid('ProductVariant', found.variant.id),
              title: found.variant.title ?? 'Default Title',
              price: (found.variant.price ?? 10).toFixed(2),
              availableForSale: stock.available(shop.domain, found.variant.id),
              inventoryQuantity: stock.quantity(shop.domain, found.variant.id),
              product: { id: gid('Product', found.product.id), title: found.product.title ?? found.product.handle },
            }
          : null,
      },
    }));
  };
}
