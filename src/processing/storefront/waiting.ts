// The events of a visitor not identified yet, as they wait in PixelEvent rows: only what the
// events of an identified shopper need later (views, adds to cart, checkout starts), with no email.
import type { Prisma } from '@prisma/client';
import type { CartItem, ProductItem } from './items';
import type { WaitingRow } from './store';
import type { StoreEvent } from './wire';

const NAMES = { view: 'product_viewed', add: 'product_added_to_cart', checkout: 'checkout_started' } as const;

/** The row an anonymous event waits in (none for the events nothing is built from). */
export function waitingRow(shopId: string, clientId: string, e: StoreEvent, expiresAt: Date): Prisma.PixelEventCreateManyInput | null {
  if (e.kind === 'other') return null;
  const data = e.kind === 'view' ? e.product : e.kind === 'add' ? e.line : {};
  return { shopId, clientId, name: NAMES[e.kind], eventId: e.id, occurredAt: e.at, data: JSON.stringify(data), expiresAt };
}

/** A waiting row back into the event it was. */
export function eventOf(row: WaitingRow): StoreEvent | null {
  try {
    const data = JSON.parse(row.data) as unknown;
    const base = { id: row.eventId, at: row.occurredAt };
    if (row.name === NAMES.view) return { ...base, kind: 'view', product: data as ProductItem };
    if (row.name === NAMES.add) return { ...base, kind: 'add', line: data as CartItem };
    if (row.name === NAMES.checkout) return { ...base, kind: 'checkout' };
  } catch {
    /* a row we cannot read is left to expire */
  }
  return null;
}
