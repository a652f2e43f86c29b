// A unit's product references become Shopify's products: one describe call per shop for every
// product and variant its storefront batches and waiting events name (src/integrations/shopify/
// product-describe.ts), within the unit's deadline. Each view or add to cart then carries
// Shopify's facts; is dropped, when Shopify says the shop has no such product or variant
// ('unknown') or the shop did not grant read_products ('no_scope'); or waits for a later lookup
// ('pending'): a slow, throttled or failing Admin API never decides an event's fate.
import type { DescribeOutcome, ProductCatalog, ProductFacts, ProductRef } from '../../integrations/shopify/products';
import { cartItem, productItem } from './items';
import { keyOf, type StorefrontShop } from './store';
import type { Undescribed } from './waiting';
import type { StoreEvent, WireEvent } from './wire';

const refKey = (shopId: string, r: ProductRef) => keyOf(shopId, `${r.product_id}\u0000${r.variant_id ?? ''}`);

/** What the unit knows of a referenced product: Shopify's facts, or why not. */
export type Answer = ProductFacts | 'unknown' | 'no_scope' | 'pending';

export interface Answers {
  get(shopId: string, ref: ProductRef): Answer;
  /** How each shop's lookup went (shops with nothing to look up are absent). */
  outcomes: Map<string, DescribeOutcome>;
}

/** Describes the references of each shop (side by side), by `deadline` (Date.now epoch ms). */
export async function describeAll(
  products: Pick<ProductCatalog, 'describe'>,
  byShop: Map<string, { shop: StorefrontShop; refs: ProductRef[] }>,
  deadline: number,
): Promise<Answers> {
  const answers = new Map<string, Answer>();
  const outcomes = new Map<string, DescribeOutcome>();
  await Promise.all(
    [...byShop.values()].map(async ({ shop, refs }) => {
      const unique = [...new Map(refs.map((r) => [refKey(shop.id, r), r])).values()];
      if (unique.length === 0) return;
      const res = await products.describe({ id: shop.id, domain: shop.domain, scope: shop.scope }, unique, deadline);
      outcomes.set(shop.id, res.outcome);
      unique.forEach((r, i) => {
        const d = res.items[i] ?? 'unavailable';
        answers.set(refKey(shop.id, r), d === 'unavailable' ? (res.outcome === 'no_scope' ? 'no_scope' : 'pending') : d);
      });
    }),
  );
  return { get: (shopId, ref) => answers.get(refKey(shopId, ref)) ?? 'pending', outcomes };
}

/** A storefront event as the unit can take it: described, waiting for its product, or dropped and why. */
export type Resolved =
  { kind: 'ready'; event: StoreEvent } | { kind: 'wait'; event: Undescribed } | { kind: 'drop'; reason: 'unknown' | 'no_scope' };

/** One event of a batch with Shopify's product, when it names one. */
export function resolve(shopId: string, e: WireEvent, answers: Answers): Resolved {
  if (e.kind !== 'view' && e.kind !== 'add') return { kind: 'ready', event: e };
  const facts = answers.get(shopId, e.ref);
  if (facts === 'pending') return { kind: 'wait', event: e };
  if (facts === 'unknown' || facts === 'no_scope') return { kind: 'drop', reason: facts };
  return { kind: 'ready', event: described(e, facts) };
}

/** A view or add to cart with Shopify's facts. */
export function described(e: Undescribed, facts: ProductFacts): StoreEvent {
  const soldOut = facts.available === false ? { soldOut: true } : {};
  return e.kind === 'view'
    ? { id: e.id, at: e.at, kind: 'view', product: productItem(facts), ...soldOut }
    : { id: e.id, at: e.at, kind: 'add', line: cartItem(facts, e.quantity), ...soldOut };
}
