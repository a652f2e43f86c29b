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

/**
 * Most line items an event body carries. An order can list thousands (10,000 lines would make a
 * 2 MB body); past the cap the list holds the first MAX_LINE_ITEMS and the event says
 * `line_items_truncated: true`, while `item_count` still counts every item.
 */
export const MAX_LINE_ITEMS = 100;

/** Most entries of any other list an event body carries (discount codes, tracking numbers and URLs). */
export const MAX_LIST_ENTRIES = 50;

/** The first `max` entries of a list, and whether any were left out. */
export function capped<T>(list: readonly T[], max: number): { list: T[]; truncated: boolean } {
  return list.length > max ? { list: list.slice(0, max), truncated: true } : { list: [...list], truncated: false };
}

/**
 * A list attribute and, when it was cut to `max`, `<name>_truncated: true` beside it. Attributes
 * of a list within the cap carry no flag, so the body of an ordinary order holds only the
 * contract's attributes.
 */
export function listAttribute<T>(name: string, list: readonly T[], max: number): Record<string, T[] | true> {
  const c = capped(list, max);
  return c.truncated ? { [name]: c.list, [`${name}_truncated`]: true } : { [name]: c.list };
}

/**
 * The line items an event shows (the first MAX_LINE_ITEMS), the exact total quantity of all of
 * them, and whether the list was cut. Only the items shown are mapped and looked up, so a huge
 * order costs little more than its parse.
 */
export function lineItems(v: unknown, products?: ProductLookup): { items: LineItem[]; itemCount: number; truncated: boolean; raw: Obj[] } {
  const all = objs(v);
  const raw = all.length > MAX_LINE_ITEMS ? all.slice(0, MAX_LINE_ITEMS) : all;
  const items = raw.map((li) => lineItem(li, products));
  let itemCount = 0;
  for (const li of all) itemCount += int(li.quantity) ?? 0;
  return { items, itemCount, truncated: all.length > raw.length, raw };
}

/** The line items attribute of an event: the items and, when cut, `line_items_truncated: true`. */
export function lineItemsAttribute(
  items: readonly LineItem[],
  truncated: boolean,
): { line_items: LineItem[]; line_items_truncated?: true } {
  const c = capped(items, MAX_LINE_ITEMS);
  return c.truncated || truncated ? { line_items: c.list, line_items_truncated: true } : { line_items: c.list };
}

/** The product and variant ids of the line items an event shows: what to look up before mapping it. */
export function lineItemIds(v: unknown): Array<{ product_id: string | null; variant_id: string | null }> {
  return objs(v)
    .slice(0, MAX_LINE_ITEMS)
    .map((li) => ({ product_id: id(li.product_id), variant_id: id(li.variant_id) }));
}
