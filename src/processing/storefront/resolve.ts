// A batch's product references become Shopify's products: one describe call per shop for every
// product and variant its storefront batches name (src/integrations/shopify/product-describe.ts), then each
// view or add to cart carries Shopify's facts, or is dropped: a product or variant the shop does
// not have ('unknown'), or one Shopify could not describe in time ('unavailable').
import type { Described, ProductCatalog, ProductRef } from '../../integrations/shopify/products';
import { cartItem } from './items';
import { keyOf, type PixelShop } from './store';
import type { StoreEvent, WireEvent } from './wire';

const refKey = (shopId: string, r: ProductRef) => keyOf(shopId, `${r.product_id}\u0000${r.variant_id ?? ''}`);

export interface Answers {
  get(shopId: string, ref: ProductRef): Described;
  apiCalls: number;
}

/** Describes the references of each shop (side by side), by `deadline` (Date.now epoch ms). */
export async function describeAll(
  products: Pick<ProductCatalog, 'describe'>,
  byShop: Map<string, { shop: PixelShop; refs: ProductRef[] }>,
  deadline: number,
): Promise<Answers> {
  const answers = new Map<string, Described>();
  let apiCalls = 0;
  await Promise.all(
    [...byShop.values()].map(async ({ shop, refs }) => {
      const unique = [...new Map(refs.map((r) => [refKey(shop.id, r), r])).values()];
      if (unique.length === 0) return;
      const res = await products.describe({ id: shop.id, domain: shop.domain, scope: shop.scope }, unique, deadline);
      apiCalls += res.apiCalls;
      unique.forEach((r, i) => answers.set(refKey(shop.id, r), res.items[i] ?? 'unavailable'));
    }),
  );
  return { get: (shopId, ref) => answers.get(refKey(shopId, ref)) ?? 'unavailable', apiCalls };
}

/** A batch's events with Shopify's products; the dropped ones counted by why. */
export function withProducts(
  shopId: string,
  events: readonly WireEvent[],
  answers: Answers,
): { events: StoreEvent[]; unknown: number; unavailable: number } {
  const out: StoreEvent[] = [];
  let unknown = 0;
  let unavailable = 0;
  for (const e of events) {
    if (e.kind !== 'view' && e.kind !== 'add') {
      out.push(e);
      continue;
    }
    const facts = answers.get(shopId, e.ref);
    if (facts === 'unknown') unknown += 1;
    else if (facts === 'unavailable') unavailable += 1;
    else if (e.kind === 'view') out.push({ id: e.id, at: e.at, kind: 'view', product: facts });
    else out.push({ id: e.id, at: e.at, kind: 'add', line: cartItem(facts, e.quantity) });
  }
  return { events: out, unknown, unavailable };
}
