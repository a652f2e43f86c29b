// orders/create, orders/paid, orders/fulfilled, orders/cancelled.
import type { EventName } from '../settings/settings';
import { assemble, ignored, type Draft, type Subject } from './build';
import { chooseEmail, customerFor, purchaseContact } from './contact';
import { purchaseProfile } from './customer-facts';
import { lineItems, lineItemsAttribute, listAttribute, MAX_LIST_ENTRIES, type ProductLookup } from './items';
import { arr, firstIso, int, key, money, obj, objectId, objs, str, type Obj } from './read';
import type { MapInput, MapOutput, StoredOrder } from './types';

// the order's email, else its contact_email, else its customer's (email may be "", contact_email
// null, customer missing: the next candidate is taken)
const orderEmail = (order: Obj) => chooseEmail(order.email, order.contact_email, obj(order.customer)?.email);

/**
 * The summary of an order that later topics need (a fulfillment names its order but not its
 * customer), or null when the payload is not an order. The email is picked as for order events.
 */
export function orderSummaryOf(payload: unknown, products?: ProductLookup): StoredOrder | null {
  const order = obj(payload);
  const orderId = objectId(order);
  if (!order || orderId === null) return null;
  const { items, truncated } = lineItems(order.line_items, products);
  return {
    orderId,
    orderName: str(order.name),
    orderNumber: int(order.order_number),
    email: orderEmail(order).email,
    customerId: objectId(obj(order.customer)),
    currency: str(order.currency),
    lineItems: items,
    ...(truncated ? { lineItemsTruncated: true } : {}),
  };
}

/** What every order mapper hands back besides its events: the summary and the customer's profile to store. */
function summaryOf(order: Obj, input: MapInput): Pick<MapOutput, 'orderSummary' | 'profile'> {
  const summary = orderSummaryOf(order, input.products);
  const profile = purchaseProfile(order, input, true);
  return { ...(summary ? { orderSummary: summary } : {}), ...(profile ? { profile } : {}) };
}

function subjectOf(order: Obj, input: MapInput): Subject {
  const rawCustomer = obj(order.customer);
  const { email, unusable } = orderEmail(order);
  // the customer's properties only when the order's address is theirs
  const profile = customerFor(email, rawCustomer) ? purchaseProfile(order, input, true) : null;
  const contact = purchaseContact(order, profile, input.settings);
  return {
    email,
    unusableEmail: unusable,
    noEmail: 'no email on the order',
    customerId: objectId(rawCustomer),
    checkoutToken: key(order.checkout_token),
    orderId: objectId(order),
    contact,
  };
}

/** The attributes every order event carries. */
export function orderAttributes(order: Obj, products?: ProductLookup): Record<string, unknown> {
  const { items, itemCount, truncated } = lineItems(order.line_items, products);
  const shipping = obj(order.shipping_address);
  const codes = objs(order.discount_codes)
    .map((d) => str(d.code))
    .filter((c): c is string => c !== null);
  return {
    order_id: objectId(order),
    order_name: str(order.name),
    order_number: int(order.order_number),
    total_price: money(order.total_price),
    subtotal_price: money(order.subtotal_price),
    total_tax: money(order.total_tax),
    total_discounts: money(order.total_discounts),
    currency: str(order.currency),
    ...listAttribute('discount_codes', codes, MAX_LIST_ENTRIES),
    // every item's quantity, those left out of line_items too
    item_count: itemCount,
    ...lineItemsAttribute(items, truncated),
    order_status_url: str(order.order_status_url),
    shipping_city: str(shipping?.city),
    shipping_country_code: str(shipping?.country_code),
  };
}

function single(input: MapInput, order: Obj, eventName: EventName, occurredAt: string, extra: Record<string, unknown> = {}): MapOutput {
  const draft: Draft = {
    eventName,
    sourceId: input.webhookId,
    occurredAt,
    attributes: { ...orderAttributes(order, input.products), ...extra },
  };
  return assemble(input, subjectOf(order, input), [draft], summaryOf(order, input));
}

function orderOf(input: MapInput): Obj | null {
  const order = obj(input.payload);
  return order && objectId(order) !== null ? order : null;
}

const received = (input: MapInput) => input.receivedAt.toISOString();

export function mapOrderCreated(input: MapInput): MapOutput {
  const order = orderOf(input);
  if (!order) return ignored('payload is not an order');
  const subject = subjectOf(order, input);
  const occurredAt = firstIso(order.created_at, order.processed_at) ?? received(input);
  const attributes = orderAttributes(order, input.products);
  const { line_items: _omit, line_items_truncated: _cut, ...orderOnly } = attributes;
  // one product_ordered per line item shown, the first MAX_LINE_ITEMS: a huge order makes no
  // thousands of messages (and emails)
  const { items, raw } = lineItems(order.line_items, input.products);
  const perItem: Draft[] = items.map((item, i) => {
    const lineItemId = objectId(raw[i]) ?? String(i);
    return {
      eventName: 'product_ordered',
      sourceId: `${input.webhookId}:product_ordered:${lineItemId}`,
      occurredAt,
      attributes: { ...orderOnly, line_item_id: lineItemId, ...item },
    };
  });
  const drafts: Draft[] = [{ eventName: 'order_placed', sourceId: input.webhookId, occurredAt, attributes }, ...perItem];
  const cancel = subject.checkoutToken !== null || subject.email !== null;
  const extra = cancel ? { cancelAbandoned: { checkoutToken: subject.checkoutToken, email: subject.email } } : {};
  const variantIds = [...new Set(items.map((i) => i.variant_id).filter((v): v is string => v !== null))];
  const purchase =
    subject.email !== null && variantIds.length ? { purchase: { email: subject.email, variantIds, at: new Date(occurredAt) } } : {};
  return assemble(input, subject, drafts, { ...extra, ...purchase, ...summaryOf(order, input) });
}

export function mapOrderPaid(input: MapInput): MapOutput {
  const order = orderOf(input);
  if (!order) return ignored('payload is not an order');
  return single(input, order, 'order_paid', firstIso(order.updated_at, order.processed_at, order.created_at) ?? received(input));
}

function addAll(set: Set<string>, values: unknown[]): void {
  for (const v of values) {
    const s = str(v);
    if (s !== null) set.add(s);
  }
}

const DEAD_FULFILLMENT = new Set(['cancelled', 'error', 'failure']);

export function mapOrderFulfilled(input: MapInput): MapOutput {
  const order = orderOf(input);
  if (!order) return ignored('payload is not an order');
  const fulfillments = objs(order.fulfillments).filter((f) => !DEAD_FULFILLMENT.has(str(f.status) ?? ''));
  const numbers = new Set<string>();
  const urls = new Set<string>();
  for (const f of fulfillments) {
    addAll(numbers, [...arr(f.tracking_numbers), f.tracking_number]);
    addAll(urls, [...arr(f.tracking_urls), f.tracking_url]);
  }
  const latest = fulfillments
    .map((f) => firstIso(f.created_at, f.updated_at))
    .filter((t): t is string => t !== null)
    .sort()
    .pop();
  const occurredAt = latest ?? firstIso(order.updated_at) ?? received(input);
  return single(input, order, 'order_fulfilled', occurredAt, {
    ...listAttribute('tracking_numbers', [...numbers], MAX_LIST_ENTRIES),
    ...listAttribute('tracking_urls', [...urls], MAX_LIST_ENTRIES),
  });
}

export function mapOrderCancelled(input: MapInput): MapOutput {
  const order = orderOf(input);
  if (!order) return ignored('payload is not an order');
  const occurredAt = firstIso(order.cancelled_at, order.updated_at) ?? received(input);
  return single(input, order, 'order_cancelled', occurredAt, { cancel_reason: str(order.cancel_reason) });
}
