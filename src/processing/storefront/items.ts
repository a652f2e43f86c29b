// What a storefront event says about a product or a cart line, as we store and send it. Every
// field but the ids and the quantity is Shopify's (the product cache or the Admin API, see
// src/integrations/shopify/product-describe.ts); nothing the browser wrote about a product is kept.
import { createHash } from 'node:crypto';
import type { ProductFacts } from '../../integrations/shopify/products';

/** Ids, titles, SKU, price and currency, product page and image: Shopify's, as events carry them. */
export type ProductItem = Omit<ProductFacts, 'available'>;

/** What an event says about a product: its facts without the stock state, which only decides who hears of a restock. */
export function productItem(facts: ProductFacts): ProductItem {
  const { available: _stock, ...item } = facts;
  return item;
}

export interface CartItem extends ProductItem {
  quantity: number;
  /** Shopify's price × the quantity added (null without a price). */
  line_total: number | null;
}

/** A cart line: Shopify's product facts and the quantity the shopper added. */
export function cartItem(facts: ProductFacts, quantity: number): CartItem {
  return { ...productItem(facts), quantity, line_total: facts.price === null ? null : sum([facts.price * quantity]) };
}

/** A short, stable digest for derived source ids (no personal data in them, and bounded length). */
export function digest(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('base64url').slice(0, 22);
}

/** Money sums in micro-units, so 0.1 + 0.2 is 0.3. */
export function sum(values: Array<number | null>): number {
  return values.reduce<number>((acc, v) => acc + Math.round((v ?? 0) * 1e6), 0) / 1e6;
}
