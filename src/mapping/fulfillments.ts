// fulfillments/create, fulfillments/update and fulfillment_events/create → the shipping events
// order_shipped, shipment_out_for_delivery, shipment_delivered and shipment_delivery_failed.
//
// A fulfillment's webhooks say little on their own (an event names only its fulfillment and
// order; a fulfillment often has no email), so the caller passes what was stored before
// (input.fulfillment, input.order) and stores the merged state this returns. Shopify delivers
// unordered and repeats itself: each (fulfillment, event) is sent at most once, under the
// derived source id `fulfillment:<id>:<event_name>`, whatever order the webhooks arrive in.
import type { EventName } from '../settings/settings';
import { assemble, ignored, type Draft } from './build';
import { chooseEmail, profileContact } from './contact';
import { lineItems, lineItemsAttribute, listAttribute, MAX_LIST_ENTRIES, type LineItem } from './items';
import { arr, firstIso, id, iso, obj, objectId, str, type Obj } from './read';
import type { MapInput, MapOutput, StoredFulfillment } from './types';

export type ShippingEvent = Extract<
  EventName,
  'order_shipped' | 'shipment_out_for_delivery' | 'shipment_delivered' | 'shipment_delivery_failed'
>;

/** Shipment statuses that are forwarded; the others (in_transit, confirmed, label_printed, ...) are not. */
export const STATUS_EVENTS: ReadonlyMap<string, ShippingEvent> = new Map([
  ['out_for_delivery', 'shipment_out_for_delivery'],
  ['delivered', 'shipment_delivered'],
  ['attempted_delivery', 'shipment_delivery_failed'],
  ['failure', 'shipment_delivery_failed'],
]);

export const NO_EMAIL_YET = 'no email known for the order yet';

/** Stable across redeliveries and across topics, so the outbox keeps one message per (fulfillment, event). */
export const fulfillmentSourceId = (fulfillmentId: string, event: ShippingEvent) => `fulfillment:${fulfillmentId}:${event}`;

// A fulfillment in one of these states shipped nothing (the same rule as orders/fulfilled).
const DEAD_FULFILLMENT = new Set(['cancelled', 'error', 'failure']);

/** What one webhook tells about its fulfillment. */
interface Report {
  fulfillmentId: string;
  orderId: string | null;
  /** fulfillments/* only: the payload describes the fulfillment itself. */
  describesFulfillment: boolean;
  /** The fulfillment's own status (fulfillments/*): cancelled, error or failure shipped nothing. */
  dead: boolean;
  /** Shipment status, lower case: the event's status, or a fulfillment's shipment_status. */
  status: string | null;
  trackingCompany: string | null;
  trackingNumbers: string[];
  trackingUrls: string[];
  lineItems: LineItem[];
  lineItemsTruncated: boolean;
  email: unknown;
  orderName: string | null;
  occurredAt: string;
  estimatedDeliveryAt: string | null;
}

function unique(values: unknown[]): string[] {
  return [...new Set(values.map(str).filter((s): s is string => s !== null))];
}

/** A fulfillment's name is its order's plus a sequence ("#1042.1"): the order's name when nothing better is known. */
function orderNameFrom(fulfillmentName: unknown): string | null {
  return /^(.+)\.\d+$/.exec(str(fulfillmentName) ?? '')?.[1] ?? null;
}

function fromFulfillment(f: Obj, input: MapInput): Report | null {
  const fulfillmentId = objectId(f);
  if (fulfillmentId === null) return null;
  const created = input.topic === 'fulfillments/create';
  const items = lineItems(f.line_items, input.products);
  return {
    fulfillmentId,
    orderId: id(f.order_id),
    describesFulfillment: true,
    dead: DEAD_FULFILLMENT.has(str(f.status)?.toLowerCase() ?? ''),
    status: str(f.shipment_status)?.toLowerCase() ?? null,
    trackingCompany: str(f.tracking_company),
    trackingNumbers: unique([...arr(f.tracking_numbers), f.tracking_number]),
    trackingUrls: unique([...arr(f.tracking_urls), f.tracking_url]),
    lineItems: items.items,
    lineItemsTruncated: items.truncated,
    email: f.email,
    orderName: orderNameFrom(f.name),
    occurredAt: (created ? firstIso(f.created_at, f.updated_at) : firstIso(f.updated_at, f.created_at)) ?? input.receivedAt.toISOString(),
    estimatedDeliveryAt: iso(f.estimated_delivery_at),
  };
}

function fromEvent(e: Obj, input: MapInput): Report | null {
  const fulfillmentId = id(e.fulfillment_id);
  if (fulfillmentId === null) return null;
  return {
    fulfillmentId,
    orderId: id(e.order_id),
    describesFulfillment: false,
    dead: false,
    status: str(e.status)?.toLowerCase() ?? null,
    trackingCompany: null,
    trackingNumbers: [],
    trackingUrls: [],
    lineItems: [],
    lineItemsTruncated: false,
    email: e.email,
    orderName: null,
    occurredAt: firstIso(e.happened_at, e.created_at) ?? input.receivedAt.toISOString(),
    estimatedDeliveryAt: iso(e.estimated_delivery_at),
  };
}

/**
 * Why `event` is not sent now, given the events already sent for the fulfillment; null if it is.
 * Besides never sending an event twice: once shipment_delivered was sent, a later order_shipped,
 * shipment_out_for_delivery or shipment_delivery_failed is dropped. Webhooks arrive unordered and
 * carriers report late, so such an event would tell the customer something already outdated
 * ("out for delivery" after "delivered"); the delivered parcel is the end of the story. A failed
 * attempt reported before the delivery is still sent, and so is out_for_delivery after it.
 */
function blocked(event: ShippingEvent, sent: ReadonlySet<string>): string | null {
  if (sent.has(event)) return `${event} already sent for this fulfillment`;
  if (event !== 'shipment_delivered' && sent.has('shipment_delivered')) return 'the shipment was already delivered';
  return null;
}

/** Which events this report calls for, before dedupe, or why none. */
function dueEvents(report: Report, state: StoredFulfillment): { status: ShippingEvent | null; shipped: boolean; reason: string } {
  if (report.dead) return { status: null, shipped: false, reason: 'the fulfillment is cancelled or failed' };
  const status = report.status !== null ? (STATUS_EVENTS.get(report.status) ?? null) : null;
  // order_shipped: the first fulfillments/* webhook that carries a tracking number (a fulfillment
  // is often created first and given its tracking number by a later update)
  const shipped = report.describesFulfillment && state.trackingNumbers.length > 0;
  let reason = 'nothing to forward';
  if (report.describesFulfillment && state.trackingNumbers.length === 0) reason = 'the fulfillment has no tracking number yet';
  if (report.status !== null && status === null && !shipped) reason = `shipment status ${report.status} is not forwarded`;
  return { status, shipped, reason };
}

export function mapFulfillment(input: MapInput): MapOutput {
  const payload = obj(input.payload);
  const isEvent = input.topic === 'fulfillment_events/create';
  const report = payload ? (isEvent ? fromEvent(payload, input) : fromFulfillment(payload, input)) : null;
  if (!report) return ignored(isEvent ? 'payload is not a fulfillment event' : 'payload is not a fulfillment');

  // The caller looks these up by the ids of this payload; a mismatch would mail the wrong person.
  const prior = input.fulfillment?.fulfillmentId === report.fulfillmentId ? input.fulfillment : null;
  const orderId = report.orderId ?? prior?.orderId ?? input.order?.orderId ?? null;
  const order = input.order && (orderId === null || input.order.orderId === orderId) ? input.order : null;

  // The newest fulfillments/* payload is the fulfillment's whole current state; an event carries
  // none of it. Numbers and urls go together: a custom carrier may give numbers without urls.
  const tracked = report.trackingNumbers.length > 0;
  const choice = chooseEmail(report.email, prior?.email, order?.email, input.orderEmail);
  const state: StoredFulfillment = {
    fulfillmentId: report.fulfillmentId,
    orderId,
    orderName: order?.orderName ?? prior?.orderName ?? report.orderName,
    trackingCompany: report.trackingCompany ?? prior?.trackingCompany ?? null,
    trackingNumbers: tracked ? report.trackingNumbers : (prior?.trackingNumbers ?? []),
    trackingUrls: tracked ? report.trackingUrls : (prior?.trackingUrls ?? []),
    lineItems: report.lineItems.length > 0 ? report.lineItems : (prior?.lineItems ?? []),
    ...((report.lineItems.length > 0 ? report.lineItemsTruncated : prior?.lineItemsTruncated) ? { lineItemsTruncated: true } : {}),
    // the payload's, else what we knew of the fulfillment, else its order's (stored summary, or
    // the last message stored for the order)
    email: choice.email,
    sent: [...(prior?.sent ?? [])],
  };

  const due = dueEvents(report, state);
  const seen = new Set(state.sent);
  const skipped: string[] = [];
  const take = (event: ShippingEvent): boolean => {
    const why = blocked(event, seen);
    if (why !== null) skipped.push(why);
    else seen.add(event);
    return why === null;
  };
  // the status first: a delivered reported by this very webhook makes order_shipped moot
  const statusEvent = due.status !== null && take(due.status) ? due.status : null;
  const shipped = due.shipped && take('order_shipped');
  const events: ShippingEvent[] = [...(shipped ? ['order_shipped' as const] : []), ...(statusEvent ? [statusEvent] : [])];

  const attributes: Record<string, unknown> = {
    order_id: state.orderId,
    order_name: state.orderName,
    fulfillment_id: state.fulfillmentId,
    tracking_company: state.trackingCompany,
    ...listAttribute('tracking_numbers', state.trackingNumbers, MAX_LIST_ENTRIES),
    ...listAttribute('tracking_urls', state.trackingUrls, MAX_LIST_ENTRIES),
    shipment_status: report.status,
    ...(report.estimatedDeliveryAt !== null ? { estimated_delivery_at: report.estimatedDeliveryAt } : {}),
    ...(state.lineItems.length > 0
      ? lineItemsAttribute(state.lineItems, state.lineItemsTruncated ?? false)
      : lineItemsAttribute(order?.lineItems ?? [], order?.lineItemsTruncated ?? false)),
  };
  const drafts: Draft[] = events.map((event) => ({
    eventName: event,
    sourceId: fulfillmentSourceId(state.fulfillmentId, event),
    occurredAt: report.occurredAt,
    attributes,
  }));

  // An event counts as sent once a message is stored for it, or when it fell due while turned
  // off. One without an email stays unsent, so a later webhook of the fulfillment can still send it.
  for (const event of events) {
    const on = input.settings.events[event];
    if (!on || state.email !== null) state.sent.push(event);
  }

  return assemble(
    input,
    {
      email: state.email,
      unusableEmail: choice.unusable,
      noEmail: NO_EMAIL_YET,
      customerId: order?.customerId ?? null,
      checkoutToken: null,
      orderId: state.orderId,
      contact: profileContact(input.profile, state.email, input.settings),
    },
    drafts,
    { fulfillmentState: state, whenEmpty: skipped[0] ?? due.reason },
  );
}
