// Who an event is about: the email it goes to, and the contact properties sent with it.
import { createHash } from 'node:crypto';
import { CONTACT_PROPERTIES, type ContactProperty, type Settings } from '../settings/settings';
import { isEmailAddress, normalizeEmail } from './email';
import { obj, objectId, str, type Obj } from './read';

export interface EmailChoice {
  /** The first usable address among the candidates, trimmed and lower-cased. */
  email: string | null;
  /** When none is usable: the first address that was given but is not one (for the skip reason). */
  unusable: string | null;
}

/**
 * The first candidate that is a valid address (email.ts), trimmed and lower-cased: the service
 * keys contacts by email, so "Ann@Example.com" and "ann@example.com" must be one contact (and
 * one redaction match). An empty or invalid candidate is passed over for the next one.
 */
export function chooseEmail(...candidates: unknown[]): EmailChoice {
  let unusable: string | null = null;
  for (const c of candidates) {
    const e = typeof c === 'string' ? normalizeEmail(c) : '';
    if (e === '') continue;
    if (isEmailAddress(e)) return { email: e, unusable: null };
    unusable ??= e;
  }
  return { email: null, unusable };
}

export function pickEmail(...candidates: unknown[]): string | null {
  return chooseEmail(...candidates).email;
}

/** email_marketing_consent.state ('subscribed', 'not_subscribed', 'unsubscribed', ...), or null when unknown. */
export function consentState(customer: Obj | null): string | null {
  return str(obj(customer?.email_marketing_consent)?.state);
}

export function splitTags(v: unknown): string[] | null {
  if (Array.isArray(v)) return v.map(str).filter((t): t is string => t !== null);
  if (typeof v !== 'string') return null;
  return v
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
}

export interface ContactSource {
  customer: Obj | null;
  /** Where names come from when the customer has none (an order's billing address). */
  nameFallback?: Obj | null;
  /** Candidates for city and country_code, best first; the first with either is used. */
  addresses: Array<Obj | null | undefined>;
}

/** All properties we know, before the merchant's selection. Unknown values are left out. */
function allProperties(src: ContactSource): Partial<Record<ContactProperty, unknown>> {
  const c = src.customer;
  const state = consentState(c);
  const legacy = c?.accepts_marketing;
  const address = src.addresses.map(obj).find((a) => a !== null && (str(a.city) ?? str(a.country_code)) !== null) ?? null;
  return {
    first_name: str(c?.first_name) ?? str(src.nameFallback?.first_name),
    last_name: str(c?.last_name) ?? str(src.nameFallback?.last_name),
    phone: str(c?.phone),
    shopify_customer_id: objectId(c),
    email_marketing_state: state,
    accepts_marketing: state !== null ? state === 'subscribed' : typeof legacy === 'boolean' ? legacy : null,
    tags: c ? splitTags(c.tags) : null,
    city: str(address?.city),
    country_code: str(address?.country_code)?.toUpperCase() ?? null,
  };
}

/**
 * The contact properties to send as top-level keys, as the merchant selected them.
 * Keys with unknown values are omitted so that they never blank a field on the contact.
 */
export function contactProperties(src: ContactSource, settings: Settings): Record<string, unknown> {
  const all = allProperties(src);
  const out: Record<string, unknown> = {};
  for (const key of CONTACT_PROPERTIES) {
    const v = all[key];
    if (settings.contact_properties[key] && v !== null && v !== undefined) out[key] = v;
  }
  return out;
}

/**
 * Contact properties from an order or a checkout: the customer first, the billing name and the
 * default, shipping and billing addresses as fallbacks.
 */
export function purchaseContact(purchase: Obj, customer: Obj | null, settings: Settings): Record<string, unknown> {
  return contactProperties(
    {
      customer,
      nameFallback: obj(purchase.billing_address),
      addresses: [obj(customer?.default_address), obj(purchase.shipping_address), obj(purchase.billing_address)],
    },
    settings,
  );
}

/**
 * The customer object of an order or checkout describes the contact only if it is the same
 * person the email belongs to: an order may be placed with another email than the account's.
 */
export function customerFor(email: string | null, customer: Obj | null): Obj | null {
  if (!customer) return null;
  const own = str(customer.email);
  return own === null || email === null || own.toLowerCase() === email.toLowerCase() ? customer : null;
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  const o = obj(v);
  if (!o) return v;
  return Object.fromEntries(
    Object.keys(o)
      .sort()
      .map((k) => [k, canonical(o[k])]),
  );
}

/** A stable hash of what we send about a customer: email, mapped properties and consent. */
export function digestCustomer(input: { email: string | null; consentState: string | null; properties: Record<string, unknown> }): string {
  const json = JSON.stringify(canonical({ email: input.email, consent: input.consentState, properties: input.properties }));
  return createHash('sha256').update(json).digest('hex');
}
