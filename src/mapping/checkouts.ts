// checkouts/create and checkouts/update → checkout_started and the delayed checkout_abandoned.
import { assemble, ignored, type Draft } from './build';
import { customerFor, pickEmail, purchaseContact } from './contact';
import { lineItems } from './items';
import { firstIso, id, money, obj, str, type Obj } from './read';
import type { MapInput, MapOutput } from './types';

export function checkoutAttributes(checkout: Obj): Record<string, unknown> {
  const { items, itemCount } = lineItems(checkout.line_items);
  return {
    checkout_id: id(checkout.id),
    checkout_token: str(checkout.token),
    abandoned_checkout_url: str(checkout.abandoned_checkout_url),
    total_price: money(checkout.total_price),
    subtotal_price: money(checkout.subtotal_price),
    currency: str(checkout.currency) ?? str(checkout.presentment_currency),
    line_items: items,
    item_count: itemCount,
  };
}

/** When the abandonment fires: the checkout's last activity plus the merchant's delay. */
export function abandonAt(checkout: Obj, input: MapInput): Date {
  const last = firstIso(checkout.updated_at, checkout.created_at);
  const base = last !== null ? Date.parse(last) : input.receivedAt.getTime();
  return new Date(base + input.settings.abandonment_delay_minutes * 60_000);
}

/**
 * Both topics emit checkout_started (insert-if-absent on `checkout:<token>:started`, so it is
 * sent once, from the first delivery that has an email: guests often type it after creation)
 * and an upsert of checkout_abandoned that the latest activity keeps pushing back.
 * A completed checkout cancels the abandonment instead.
 */
export function mapCheckout(input: MapInput): MapOutput {
  const checkout = obj(input.payload);
  const token = checkout ? str(checkout.token) : null;
  if (!checkout || token === null) return ignored('payload is not a checkout');
  const rawCustomer = obj(checkout.customer);
  const email = pickEmail(checkout.email, rawCustomer?.email);
  const customerId = id(rawCustomer?.id);
  if (str(checkout.completed_at) !== null) {
    return { ...ignored('checkout completed', customerId), cancelAbandoned: { checkoutToken: token, email } };
  }
  const customer = customerFor(email, rawCustomer);
  const contact = purchaseContact(checkout, customer, input.settings);
  const attributes = checkoutAttributes(checkout);
  const runAt = abandonAt(checkout, input);
  const drafts: Draft[] = [
    {
      eventName: 'checkout_started',
      sourceId: `checkout:${token}:started`,
      occurredAt: firstIso(checkout.created_at) ?? input.receivedAt.toISOString(),
      attributes,
    },
    {
      eventName: 'checkout_abandoned',
      sourceId: `checkout:${token}:abandoned`,
      occurredAt: runAt.toISOString(),
      attributes,
      runAt,
      upsert: true,
    },
  ];
  return assemble(input, { email, noEmail: 'no email on the checkout', customerId, checkoutToken: token, contact }, drafts);
}
