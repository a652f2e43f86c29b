// Browse and cart abandonment windows, pure. A shopper (an email) has at most one pending window of
// each kind: browse (products viewed since the last add to cart or checkout) and cart (lines added
// since the last checkout). Each window is one outbox message, created with the window and moved
// later by newer activity, like checkout_abandoned; it fires when the delay passes with no add to
// cart (browse) or checkout (both), and an order cancels it too (forward-store.ts).
import type { CartItem, ProductItem } from './items';
import { sum } from './items';
import type { PendingAbandonment } from './store';

/** Products listed in a browse abandonment: the most recently viewed. */
export const MAX_BROWSED = 20;
/** Lines listed in a cart abandonment. */
export const MAX_CART_LINES = 50;

interface WindowBase {
  sourceId: string;
  /** The stored message, or null for a window this batch opened. */
  storedId: number | null;
  startedAt: string;
  /** When the message fires. */
  runAt: Date;
  /** Set when this batch added to it: its message is written. */
  changed: boolean;
}
export interface BrowseWindow extends WindowBase {
  kind: 'browse';
  products: ProductItem[];
}
export interface CartWindow extends WindowBase {
  kind: 'cart';
  lines: CartItem[];
}
export type AbandonmentWindow = BrowseWindow | CartWindow;

export interface Shopper {
  browse: BrowseWindow | null;
  cart: CartWindow | null;
}

const record = (v: unknown): Record<string, unknown> | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

/** A stored pending abandonment as its window, read from the body we wrote. */
export function windowOf(p: PendingAbandonment): AbandonmentWindow | null {
  let attr: Record<string, unknown> | null;
  try {
    attr = record(record(JSON.parse(p.body))?.event_attribute);
  } catch {
    return null;
  }
  if (!attr) return null;
  const base = {
    sourceId: p.sourceId,
    storedId: p.id,
    startedAt: typeof attr.started_at === 'string' ? attr.started_at : new Date(0).toISOString(),
    runAt: new Date(0),
    changed: false,
  };
  const list = (v: unknown) => (Array.isArray(v) ? v.filter((x) => record(x) !== null) : []);
  return p.eventName === 'browse_abandoned'
    ? { ...base, kind: 'browse', products: list(attr.products) as ProductItem[] }
    : { ...base, kind: 'cart', lines: list(attr.line_items) as CartItem[] };
}

export function newBrowse(sourceId: string, at: Date): BrowseWindow {
  return { kind: 'browse', sourceId, storedId: null, startedAt: at.toISOString(), runAt: at, changed: true, products: [] };
}

export function newCart(sourceId: string, at: Date): CartWindow {
  return { kind: 'cart', sourceId, storedId: null, startedAt: at.toISOString(), runAt: at, changed: true, lines: [] };
}

/** A view: the product moves to the end of the list (the most recent last). */
export function addView(s: BrowseWindow, p: ProductItem, runAt: Date): void {
  s.products = [...s.products.filter((x) => x.product_id !== p.product_id), p].slice(-MAX_BROWSED);
  s.runAt = runAt;
  s.changed = true;
}

/** An add to cart: a variant already in the window adds up. */
export function addLine(s: CartWindow, line: CartItem, runAt: Date): void {
  const same = s.lines.find((l) => l.product_id === line.product_id && l.variant_id === line.variant_id);
  if (same) {
    same.quantity += line.quantity;
    same.line_total = same.line_total === null || line.line_total === null ? null : sum([same.line_total, line.line_total]);
  } else {
    s.lines = [...s.lines, { ...line }].slice(-MAX_CART_LINES);
  }
  s.runAt = runAt;
  s.changed = true;
}

/** What the shopper added in this window, as the pixel saw it (it does not see removals). */
export function cartTotal(s: CartWindow): number {
  return sum(s.lines.map((l) => l.line_total));
}

export function browseAttributes(s: BrowseWindow): Record<string, unknown> {
  return { started_at: s.startedAt, products: s.products, product_count: s.products.length };
}

export function cartAttributes(s: CartWindow): Record<string, unknown> {
  return {
    started_at: s.startedAt,
    line_items: s.lines,
    item_count: s.lines.reduce((n, l) => n + l.quantity, 0),
    total_price: cartTotal(s),
    currency: s.lines.find((l) => l.currency)?.currency ?? null,
  };
}
