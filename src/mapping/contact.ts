// Who an event is about: the email it goes to, and the contact properties sent with it.
import { createHash } from 'node:crypto';
import { CONTACT_PROPERTIES, type ContactProperty, type Settings } from '../settings/settings';
import { isEmailAddress, normalizeEmail } from './email';
import { currentTags, type CustomerProfile } from './profile';
import { obj, str, type Obj } from './read';

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

export function splitTags(v: unknown): string[] | null {
  if (Array.isArray(v)) return v.map(str).filter((t): t is string => t !== null);
  if (typeof v !== 'string') return null;
  return v
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
}

/** The email marketing state the profile knows ('subscribed', 'not_subscribed', 'unsubscribed', ...), or null. */
export function consentState(profile: CustomerProfile | null): string | null {
  return profile?.emailConsent?.value.state ?? null;
}

export interface ContactSource {
  /** What is known of the customer, this payload's facts merged in; null for a guest. */
  profile: CustomerProfile | null;
  /** Where names come from when the customer has none (an order's billing address). */
  nameFallback?: Obj | null;
  /** Candidates for city, country and province when the customer has no address, best first. */
  addresses: Array<Obj | null | undefined>;
}

/** All properties we know, before the merchant's selection. Unknown values are left out. */
function allProperties(src: ContactSource): Partial<Record<ContactProperty | 'currency', unknown>> {
  const p = src.profile;
  const state = consentState(p);
  const legacy = p?.emailConsent?.value.accepts ?? null;
  const fallback = src.addresses.map(obj).find((a) => a !== null && (str(a.city) ?? str(a.country_code)) !== null) ?? null;
  const address = p?.address?.value ?? {
    city: str(fallback?.city),
    countryCode: str(fallback?.country_code)?.toUpperCase() ?? null,
    provinceCode: str(fallback?.province_code)?.toUpperCase() ?? null,
  };
  const purchases = p?.purchases?.value;
  const tagsKnown = p !== null && (p.tagsAt !== null || Object.keys(p.tags).length > 0);
  return {
    first_name: p?.name?.value.firstName ?? str(src.nameFallback?.first_name),
    last_name: p?.name?.value.lastName ?? str(src.nameFallback?.last_name),
    phone: p?.phone?.value ?? null,
    shopify_customer_id: p?.customerId ?? null,
    email_marketing_state: state,
    accepts_marketing: state !== null ? state === 'subscribed' : legacy,
    tags: tagsKnown ? currentTags(p) : null,
    city: address.city,
    country_code: address.countryCode,
    orders_count: purchases?.ordersCount ?? null,
    total_spent: purchases?.totalSpent ?? null,
    currency: purchases?.totalSpent != null ? purchases.currency : null,
    first_order_at: p?.firstOrderAt ?? null,
    last_order_at: p?.lastOrderAt ?? null,
    locale: p?.locale?.value ?? null,
    sms_marketing_state: p?.smsConsent?.value.state ?? null,
    province_code: address.provinceCode,
  };
}

/** Keys sent with a selected property: the currency of total_spent. */
const COMPANIONS: Partial<Record<ContactProperty, 'currency'>> = { total_spent: 'currency' };

/**
 * The contact properties to send as top-level keys, as the merchant selected them.
 * Keys with unknown values are omitted so that they never blank a field on the contact.
 */
export function contactProperties(src: ContactSource, settings: Settings): Record<string, unknown> {
  const all = allProperties(src);
  const out: Record<string, unknown> = {};
  for (const key of CONTACT_PROPERTIES) {
    if (!settings.contact_properties[key]) continue;
    for (const k of [key, COMPANIONS[key]]) {
      const v = k === undefined ? undefined : all[k];
      if (v !== null && v !== undefined) out[k!] = v;
    }
  }
  return out;
}

/**
 * Contact properties from an order or a checkout: the customer's profile first, the billing name
 * and the shipping and billing addresses as fallbacks.
 */
export function purchaseContact(purchase: Obj, profile: CustomerProfile | null, settings: Settings): Record<string, unknown> {
  return contactProperties(
    { profile, nameFallback: obj(purchase.billing_address), addresses: [obj(purchase.shipping_address), obj(purchase.billing_address)] },
    settings,
  );
}

/**
 * The customer's remembered properties for an event that names the customer but does not describe
 * them (a refund, a shipment): only when the event goes to the customer's own address.
 */
export function profileContact(
  profile: CustomerProfile | null | undefined,
  email: string | null,
  settings: Settings,
): Record<string, unknown> {
  if (!profile || (profile.email !== null && profile.email.value !== email)) return {};
  return contactProperties({ profile, addresses: [] }, settings);
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
