// checkouts/create and checkouts/update → checkout_started and the delayed checkout_abandoned.
import { assemble, ignored, type Draft } from './build';
import { chooseEmail, customerFor, purchaseContact } from './contact';
import { purchaseProfile } from './customer-facts';
import { lineItems, lineItemsAttribute, type ProductLookup } from './items';
import { firstIso, key, money, obj, objectId, str, type Obj } from './read';
import { DEFAULT_ABANDONMENT, LATE_AFTER_MS, type MapInput, type MapOutput } from './types';

export function checkoutAttributes(checkout: Obj, products?: ProductLookup): Record<string, unknown> {
  const { items, itemCount, truncated } = lineItems(checkout.line_items, products);
  return {
    // newer API versions' checkouts have no id, only tokens
    checkout_id: objectId(checkout) ?? key(checkout.token),
    checkout_token: key(checkout.token),
    abandoned_checkout_url: str(checkout.abandoned_checkout_url),
    total_price: money(checkout.total_price),
    subtotal_price: money(checkout.subtotal_price),
    currency: str(checkout.currency) ?? str(checkout.presentment_currency),
    ...lineItemsAttribute(items, truncated),
    // every item's quantity, those left out of line_items too
    item_count: itemCount,
  };
}

export interface Abandonment {
  /** The checkout's last activity plus the merchant's delay: when it counts as abandoned. */
  abandonedAt: Date;
  /**
   * When the event fires. A checkout that reached us promptly fires at its abandonment, exactly
   * the merchant's delay after its last activity, whatever the delay. A checkout that reached us
   * late (a retry after an outage, a replay) fires no sooner than a grace period after it arrived:
   * its order may be late too, perhaps still in Shopify's retry queue, and needs time to arrive
   * and cancel it.
   */
  runAt: Date;
  /** Set when the checkout was too old on arrival to be abandoned at all. */
  tooOld?: string;
}

export function abandonment(checkout: Obj, input: MapInput): Abandonment {
  const policy = input.abandonment ?? DEFAULT_ABANDONMENT;
  const received = input.receivedAt.getTime();
  const last = firstIso(checkout.updated_at, checkout.created_at);
  const activity = last !== null ? Date.parse(last) : received;
  const abandonedAt = new Date(activity + input.settings.abandonment_delay_minutes * 60_000);
  const age = received - activity;
  const late = age > (policy.lateAfterMs ?? LATE_AFTER_MS);
  const runAt = late ? new Date(Math.max(abandonedAt.getTime(), received + policy.graceMs)) : abandonedAt;
  if (age <= policy.maxAgeMs) return { abandonedAt, runAt };
  const days = (ms: number) => Math.round(ms / 86_400_000);
  return {
    abandonedAt,
    runAt,
    tooOld: `the checkout was last active ${days(age)} days before it reached us (no abandonment after ${days(policy.maxAgeMs)} days)`,
  };
}

/**
 * Both topics emit checkout_started (insert-if-absent on `checkout:<token>:started`, so it is
 * sent once, from the first delivery that has an email: guests often type it after creation)
 * and an upsert of checkout_abandoned that the latest activity keeps pushing back.
 * A completed checkout cancels the abandonment instead.
 */
export function mapCheckout(input: MapInput): MapOutput {
  const checkout = obj(input.payload);
  const token = checkout ? key(checkout.token) : null;
  if (!checkout || token === null) return ignored('payload is not a checkout');
  const rawCustomer = obj(checkout.customer);
  const { email, unusable } = chooseEmail(checkout.email, rawCustomer?.email);
  const customerId = objectId(rawCustomer);
  if (str(checkout.completed_at) !== null) {
    return { ...ignored('checkout completed', customerId), cancelAbandoned: { checkoutToken: token, email } };
  }
  const profile = purchaseProfile(checkout, input, false);
  const contact = purchaseContact(checkout, customerFor(email, rawCustomer) ? profile : null, input.settings);
  const attributes = checkoutAttributes(checkout, input.products);
  const when = abandonment(checkout, input);
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
      occurredAt: when.abandonedAt.toISOString(),
      attributes,
      runAt: when.runAt,
      upsert: true,
      ...(when.tooOld ? { skip: { kind: 'checkout_too_old' as const, reason: when.tooOld } } : {}),
    },
  ];
  // a guest often types the email after the first webhook: nothing is recorded without one
  return assemble(
    input,
    {
      email,
      unusableEmail: unusable,
      withoutEmail: 'ignore',
      noEmail: 'no email on the checkout yet',
      customerId,
      checkoutToken: token,
      contact,
    },
    drafts,
    profile ? { profile } : {},
  );
}
