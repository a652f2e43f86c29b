// Line items as the contract sends them, shared by orders, checkouts and shipments.
import { id, int, money, objs, str, type Obj } from './read';

/** What the Admin API tells about a line item's product (see shopify/products.ts); null when unknown. */
export interface ProductFields {
  image_url: string | null;
  product_url: string | null;
  product_handle: string | null;
}

/** The product fields of a line item, looked up before mapping (the payloads carry none). */
export type ProductLookup = (productId: string | null, variantId: string | null) => ProductFields | null;

export interface LineItem extends ProductFields {
  product_id: string | null;
  variant_id: string | null;
  title: string | null;
  variant_title: string | null;
  sku: string | null;
  quantity: number;
  price: number | null;
}

export function lineItem(li: Obj, products?: ProductLookup): LineItem {
  const productId = id(li.product_id);
  const variantId = id(li.variant_id);
  const product = products?.(productId, variantId);
  return {
    product_id: productId,
    variant_id: variantId,
    title: str(li.title),
    variant_title: str(li.variant_title),
    sku: str(li.sku),
    quantity: int(li.quantity) ?? 0,
    price: money(li.price),
    image_url: product?.image_url ?? null,
    product_url: product?.product_url ?? null,
    product_handle: product?.product_handle ?? null,
  };
}

export function lineItems(v: unknown, products?: ProductLookup): { items: LineItem[]; itemCount: number; raw: Obj[] } {
  const raw = objs(v);
  const items = raw.map((li) => lineItem(li, products));
  return { items, itemCount: items.reduce((n, li) => n + li.quantity, 0), raw };
}

/** The product and variant ids of a payload's line items: what to look up before mapping it. */
export function lineItemIds(v: unknown): Array<{ product_id: string | null; variant_id: string | null }> {
  return objs(v).map((li) => ({ product_id: id(li.product_id), variant_id: id(li.variant_id) }));
}
