// Delivery classes: how the workspace's budget of requests (10 a second unless the service says
// otherwise) is spent. Every event belongs to exactly one class (CLASS_OF_EVENT, checked by a
// test against the event table), stored with each message as its `deliveryClass`:
//   0 critical   money, shipping, privacy and consent: a customer or the law is waiting
//   1 triggers   workflows that start a conversation: checkouts, abandonments, customer changes
//   2 behaviour  storefront and product signals: useful in bulk, worthless when stale
//   3 history    the historical import
// Within a workspace the highest class with due work goes first, and each lower class with due
// work keeps a floor share of the sends (nextClass, a pure function), so nothing starves. A class
// may have a maximum useful age: a message older than that past its due time is `expired`, never
// sent.
import type { EventName } from '../settings/settings';

export const DELIVERY_CLASSES = ['critical', 'triggers', 'behaviour', 'history'] as const;
export type DeliveryClass = (typeof DELIVERY_CLASSES)[number];
/** A class's index: its `deliveryClass` column, and its priority (0 first). */
export type ClassIndex = 0 | 1 | 2 | 3;
export const CLASS_INDEX: Record<DeliveryClass, ClassIndex> = { critical: 0, triggers: 1, behaviour: 2, history: 3 };
export const HISTORY: ClassIndex = 3;

/** Every live event name, in exactly one class. Imports are history whatever they are named. */
export const CLASS_OF_EVENT: Record<EventName | 'connector_test' | 'contact_delete', DeliveryClass> = {
  // the customer is waiting for these: confirmations, refunds, shipping news
  order_placed: 'critical',
  order_paid: 'critical',
  order_fulfilled: 'critical',
  order_cancelled: 'critical',
  order_refunded: 'critical',
  order_shipped: 'critical',
  shipment_out_for_delivery: 'critical',
  shipment_delivered: 'critical',
  shipment_delivery_failed: 'critical',
  // the law is waiting: a deleted contact or a withdrawn consent must stop emails at once
  contact_delete: 'critical',
  email_unsubscribed: 'critical',
  // the merchant is waiting, watching the test arrive
  connector_test: 'critical',
  // conversations a workflow starts; minutes matter, seconds do not
  checkout_started: 'triggers',
  checkout_abandoned: 'triggers',
  browse_abandoned: 'triggers',
  cart_abandoned: 'triggers',
  customer_created: 'triggers',
  customer_updated: 'triggers',
  email_subscribed: 'triggers',
  email_changed: 'triggers',
  // a shopper asked to hear of it, and stock may sell out again
  back_in_stock: 'triggers',
  // signals in bulk: the noisiest, and the least valuable when late
  viewed_product: 'behaviour',
  added_to_cart: 'behaviour',
  product_ordered: 'behaviour',
  // inferred from views: welcome, but worth little late
  price_dropped: 'behaviour',
};

/** The class index of a live message by its event name (an unknown name counts as critical: never starved). */
export function classOf(eventName: string): ClassIndex {
  const c = (CLASS_OF_EVENT as Record<string, DeliveryClass | undefined>)[eventName];
  return c === undefined ? 0 : CLASS_INDEX[c];
}

export interface ClassPolicy {
  /** Floor share of the sends per class (0..1) while the class has due work; critical's is unused. */
  floors: Record<DeliveryClass, number>;
  /** Maximum useful age past due, ms; null: none. */
  maxAgeMs: Record<DeliveryClass, number | null>;
}

export const DEFAULT_CLASS_POLICY: ClassPolicy = {
  floors: { critical: 0, triggers: 0.15, behaviour: 0.1, history: 0.05 },
  maxAgeMs: { critical: null, triggers: 24 * 3_600_000, behaviour: 24 * 3_600_000, history: null },
};

/**
 * The workspace's recent sends per class, as decayed counts (each send multiplies every count by
 * USAGE_DECAY and adds 1 to its class): a class's share of about its last 200 sends (20 s at the
 * baseline 10/s). One send moves a share by 0.5 point, so floors hold within a point.
 */
export type Usage = [number, number, number, number];
export const USAGE_DECAY = 0.995;

/** Adds one send of class `c` to the usage (what the pacer's take writes, in SQL). */
export function addSend(usage: Usage, c: ClassIndex): Usage {
  return usage.map((u, i) => u * USAGE_DECAY + (i === c ? 1 : 0)) as Usage;
}

/**
 * Which class sends next, given how many messages each class has due: the highest class with due
 * work, unless a lower class with due work is below its floor share of the recent sends; then the
 * one furthest below its floor (the higher on a tie). With `topOnly`, the highest class with due
 * work, whatever the floors. Null when nothing is due.
 */
export function nextClass(due: readonly number[], usage: Usage, floors: readonly number[], topOnly = false): ClassIndex | null {
  const total = usage.reduce((a, b) => a + b, 0);
  let top: ClassIndex | null = null;
  let starved: ClassIndex | null = null;
  let worst = 0;
  for (let c = 0 as ClassIndex; c < 4; c = (c + 1) as ClassIndex) {
    if (!((due[c] ?? 0) > 0)) continue;
    if (top === null) {
      top = c;
      if (topOnly) break;
      continue;
    }
    const share = total > 0 ? usage[c] / total : 0;
    const deficit = (floors[c] ?? 0) - share;
    if (deficit > worst) {
      worst = deficit;
      starved = c;
    }
  }
  return starved ?? top;
}

/**
 * The classes of the next `n` sends, given how many messages each class has due (`due`), the
 * usage moving with each send as the takes will move it. A floor's send is never followed by
 * another while the highest class has due work: a class that comes back after a quiet spell
 * catches up its floor between the highest class's sends, not in a burst before them.
 */
export function planClasses(due: readonly number[], usage: Usage, floors: readonly number[], n: number): ClassIndex[] {
  const left = [...due];
  const plan: ClassIndex[] = [];
  let u = usage;
  let floorSent = false;
  for (let i = 0; i < n; i++) {
    const top = nextClass(left, u, floors, true);
    const c = nextClass(left, u, floors, floorSent);
    if (c === null) break;
    floorSent = c !== top;
    plan.push(c);
    left[c] = (left[c] ?? 0) - 1;
    u = addSend(u, c);
  }
  return plan;
}

/** The policy's floors as an array by class index. */
export function floorsOf(policy: ClassPolicy): number[] {
  return DELIVERY_CLASSES.map((c) => (c === 'critical' ? 0 : policy.floors[c]));
}
