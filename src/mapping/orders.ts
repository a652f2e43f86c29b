// orders/create, orders/paid, orders/fulfilled, orders/cancelled.
import type { EventName } from '../settings/settings';
import { assemble, ignored, type Draft, type Subject } from './build';
import { customerFor, pickEmail, purchaseContact } from './contact';
import { lineItems } from './items';
import { arr, firstIso, id, int, money, obj, objs, str, type Obj } from './read';
import type { MapInput, MapOutput } from './types';

function subjectOf(order: Obj, input: MapInput): Subject {
  const rawCustomer = obj(order.customer);
  const email = pickEmail(order.email, rawCustomer?.email, order.contact_email);
  const customer = customerFor(email, rawCustomer);
  const contact = purchaseContact(order, customer, input.settings);
  return {
    email,
    noEmail: 'no email on the order',
    customerId: id(rawCustomer?.id),
    checkoutToken: str(order.checkout_token),
    orderId: id(order.id),
    contact,
  };
}

/** The attributes every order event carries. */
export function orderAttributes(order: Obj): Record<string, unknown> {
  const { items, itemCount } = lineItems(order.line_items);
  const shipping = obj(order.shipping_address);
  return {
    order_id: id(order.id),
    order_name: str(order.name),
    order_number: int(order.order_number),
    total_price: money(order.total_price),
    subtotal_price: money(order.subtotal_price),
    total_tax: money(order.total_tax),
    total_discounts: money(order.total_discounts),
    currency: str(order.currency),
    discount_codes: objs(order.discount_codes).map((d) => str(d.code)).filter((c): c is string => c !== null),
    item_count: itemCount,
    line_items: items,
    order_status_url: str(order.order_status_url),
    shipping_city: str(shipping?.city),
    shipping_country_code: str(shipping?.country_code),
  };
}

function single(input: MapInput, order: Obj, eventName: EventName, occurredAt: string, extra: Record<string, unknown> = {}): MapOutput {
  const draft: Draft = { eventName, sourceId: input.webhookId, occurredAt, attributes: { ...orderAttributes(order), ...extra } };
  return assemble(input, subjectOf(order, input), [draft]);
}

function orderOf(input: MapInput): Obj | null {
  const order = obj(input.payload);
  return order && id(order.id) !== null ? order : null;
}

const received = (input: MapInput) => input.receivedAt.toISOString();

export function mapOrderCreated(input: MapInput): MapOutput {
  const order = orderOf(input);
  if (!order) return ignored('payload is not an order');
  const subject = subjectOf(order, input);
  const occurredAt = firstIso(order.created_at, order.processed_at) ?? received(input);
  const attributes = orderAttributes(order);
  const { line_items: _omit, ...orderOnly } = attributes;
  const { items, raw } = lineItems(order.line_items);
  const perItem: Draft[] = items.map((item, i) => {
    const lineItemId = id(raw[i]?.id) ?? String(i);
    return {
      eventName: 'product_ordered',
      sourceId: `${input.webhookId}:product_ordered:${lineItemId}`,
      occurredAt,
      attributes: { ...orderOnly, line_item_id: lineItemId, ...item },
    };
  });
  const drafts: Draft[] = [{ eventName: 'order_placed', sourceId: input.webhookId, occurredAt, attributes }, ...perItem];
  const cancel = subject.checkoutToken !== null || subject.email !== null;
  return assemble(input, subject, drafts, cancel ? { cancelAbandoned: { checkoutToken: subject.checkoutToken, email: subject.email } } : {});
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
  const latest = fulfillments.map((f) => firstIso(f.created_at, f.updated_at)).filter((t): t is string => t !== null).sort().pop();
  const occurredAt = latest ?? firstIso(order.updated_at) ?? received(input);
  return single(input, order, 'order_fulfilled', occurredAt, { tracking_numbers: [...numbers], tracking_urls: [...urls] });
}

export function mapOrderCancelled(input: MapInput): MapOutput {
  const order = orderOf(input);
  if (!order) return ignored('payload is not an order');
  const occurredAt = firstIso(order.cancelled_at, order.updated_at) ?? received(input);
  return single(input, order, 'order_cancelled', occurredAt, { cancel_reason: str(order.cancel_reason) });
}
