// The emails a signed webhook names for its shop: what confirms a storefront visitor's pending
// identity. A customer (customers/create, customers/update, and the address of an email consent
// change), an order's email, contact email and customer (orders/*), a checkout's email and
// customer (checkouts/create, checkouts/update): each is Shopify's word that the address belongs
// to someone the shop knows. Pure.
import { isEmailAddress, normalizeEmail } from '../../mapping/email';
import { obj, str } from '../../mapping/read';

/** Names the customer's address as `email_address`. */
const CONSENT_TOPIC = 'customers_email_marketing_consent/update';

export type VouchSource = 'customer' | 'order' | 'checkout' | 'admin_api' | 'identity';

/** The source a topic vouches as, or null when its emails vouch for nothing. */
export function vouchSourceOf(topic: string): VouchSource | null {
  if (topic === 'customers/create' || topic === 'customers/update' || topic === CONSENT_TOPIC) return 'customer';
  if (topic === 'checkouts/create' || topic === 'checkouts/update') return 'checkout';
  if (topic.startsWith('orders/')) return 'order';
  return null;
}

/** The valid, normalised emails a vouching topic's payload names (none for other topics). */
export function vouchedEmails(topic: string, payload: unknown): string[] {
  const source = vouchSourceOf(topic);
  const p = obj(payload);
  if (!source || !p) return [];
  const customer = obj(p.customer);
  const raw =
    source === 'customer'
      ? [p.email, p.email_address]
      : source === 'order'
        ? [p.email, p.contact_email, customer?.email]
        : [p.email, customer?.email];
  const out = new Set<string>();
  for (const v of raw) {
    const s = str(v);
    if (s === null) continue;
    const email = normalizeEmail(s);
    if (isEmailAddress(email)) out.add(email);
  }
  return [...out];
}
