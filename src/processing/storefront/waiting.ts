// Storefront events as they wait in PixelEvent rows, one queue per client id in the order they
// came: only what the events of an identified shopper need later (views, adds to cart, checkout
// starts), with no email. A row waits for an email ('email': the visitor is not identified yet),
// for Shopify to describe its product ('product': it holds the ids only), or for its turn behind
// such a row of its client ('turn').
import type { Prisma } from '@prisma/client';
import type { ProductRef } from '../../integrations/shopify/products';
import type { CartItem, ProductItem } from './items';
import type { WaitingRow } from './store';
import type { StoreEvent, WireEvent } from './wire';

const NAMES = { view: 'product_viewed', add: 'product_added_to_cart', checkout: 'checkout_started' } as const;

export type WaitsFor = 'email' | 'product' | 'turn';

/** A view or add to cart that names its product by id only: it waits for Shopify to describe it. */
export type Undescribed = Extract<WireEvent, { kind: 'view' | 'add' }>;

/** An event as it waits: described (Shopify's facts), or its product not described yet. */
export type Waiting = { described: true; event: StoreEvent } | { described: false; event: Undescribed };

/** The row an event waits in (none for the events nothing is built from). */
export function waitingRow(
  shopId: string,
  clientId: string,
  w: Waiting,
  waitsFor: WaitsFor,
  expiresAt: Date,
  describeAt: Date | null = null,
): Prisma.PixelEventCreateManyInput | null {
  const e = w.event;
  if (e.kind === 'other') return null;
  const base = { shopId, clientId, name: NAMES[e.kind], eventId: e.id, occurredAt: e.at, expiresAt, waitsFor, describeAt };
  return { ...base, data: dataOf(w) };
}

/** The key a described row's data marks a sold-out variant with, beside Shopify's product fields. */
const SOLD_OUT = '_soldOut';

/** What a row keeps of the event: Shopify's product or cart line, or the ids it waits to have described. */
export function dataOf(w: Waiting): string {
  if (!w.described) {
    const e = w.event;
    return JSON.stringify(e.kind === 'add' ? { ref: e.ref, quantity: e.quantity } : { ref: e.ref });
  }
  const e = w.event;
  const item = e.kind === 'view' ? e.product : e.kind === 'add' ? e.line : {};
  return JSON.stringify(e.kind !== 'checkout' && e.kind !== 'other' && e.soldOut ? { ...item, [SOLD_OUT]: true } : item);
}

/** A waiting row back into the event it was (null: a row that cannot be read, left to expire). */
export function waitingOf(row: WaitingRow): Waiting | null {
  try {
    const data = JSON.parse(row.data) as unknown;
    const base = { id: row.eventId, at: row.occurredAt };
    if (row.waitsFor === 'product') {
      const d = data as { ref?: ProductRef; quantity?: unknown };
      if (!d.ref || typeof d.ref.product_id !== 'string') return null;
      const ref: ProductRef = { product_id: d.ref.product_id, variant_id: typeof d.ref.variant_id === 'string' ? d.ref.variant_id : null };
      if (row.name === NAMES.view) return { described: false, event: { ...base, kind: 'view', ref } };
      if (row.name === NAMES.add && typeof d.quantity === 'number')
        return { described: false, event: { ...base, kind: 'add', ref, quantity: d.quantity } };
      return null;
    }
    const { [SOLD_OUT]: soldOut, ...item } = data as Record<string, unknown>;
    const flag = soldOut === true ? { soldOut: true } : {};
    if (row.name === NAMES.view)
      return { described: true, event: { ...base, kind: 'view', product: item as unknown as ProductItem, ...flag } };
    if (row.name === NAMES.add) return { described: true, event: { ...base, kind: 'add', line: item as unknown as CartItem, ...flag } };
    if (row.name === NAMES.checkout) return { described: true, event: { ...base, kind: 'checkout' } };
  } catch {
    /* a row we cannot read is left to expire */
  }
  return null;
}

/** A described waiting row's event (null for one that waits for its product, or cannot be read). */
export function eventOf(row: WaitingRow): StoreEvent | null {
  const w = waitingOf(row);
  return w?.described ? w.event : null;
}
