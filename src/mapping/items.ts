// Line items as the contract sends them, shared by orders and checkouts.
import { id, int, money, objs, str, type Obj } from './read';

export interface LineItem {
  product_id: string | null;
  variant_id: string | null;
  title: string | null;
  variant_title: string | null;
  sku: string | null;
  quantity: number;
  price: number | null;
}

export function lineItem(li: Obj): LineItem {
  return {
    product_id: id(li.product_id),
    variant_id: id(li.variant_id),
    title: str(li.title),
    variant_title: str(li.variant_title),
    sku: str(li.sku),
    quantity: int(li.quantity) ?? 0,
    price: money(li.price),
  };
}

export function lineItems(v: unknown): { items: LineItem[]; itemCount: number; raw: Obj[] } {
  const raw = objs(v);
  const items = raw.map(lineItem);
  return { items, itemCount: items.reduce((n, li) => n + li.quantity, 0), raw };
}
