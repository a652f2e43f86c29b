// The facts each payload gives about a customer (profile.ts keeps them): a REST customer (of any
// API version: older ones still carry consent, tags and counts), the customer of an order, and
// the topics that carry what 2025-01 took out of the customer payload. Pure.
import { chooseEmail, splitTags } from './contact';
import { emptyProfile, mergeFacts, type CustomerFacts, type CustomerProfile, type Dated, type EmailConsent } from './profile';
import { firstIso, id, int, key, money, obj, objectId, str, type Obj } from './read';
import type { MapInput } from './types';

const GID = /^gid:\/\/shopify\/[A-Za-z]+\/(\d+)(?:\?.*)?$/;

/** A numeric id or a gid (`gid://shopify/Customer/123`) as its exact decimal string. */
export function idOrGid(v: unknown): string | null {
  const s = typeof v === 'string' ? v.trim() : null;
  const gid = s !== null ? GID.exec(s) : null;
  return gid ? gid[1]! : id(v);
}

const lower = (v: unknown) => str(v)?.toLowerCase() ?? null;
const dated = <T>(at: string, value: T): Dated<T> => ({ at, value });

/** email_marketing_consent (REST) as a fact, timed by its consent_updated_at, else `fallbackAt`. */
export function emailConsentFact(consent: unknown, fallbackAt: string, legacyAccepts?: unknown): Dated<EmailConsent> | undefined {
  const c = obj(consent);
  const state = lower(c?.state);
  const accepts = typeof legacyAccepts === 'boolean' ? legacyAccepts : null;
  if (state === null && accepts === null) return undefined;
  return dated(firstIso(c?.consent_updated_at) ?? fallbackAt, { state, optInLevel: lower(c?.opt_in_level), accepts });
}

/** sms_marketing_consent (REST) as a fact. */
export function smsConsentFact(consent: unknown, fallbackAt: string): Dated<{ state: string }> | undefined {
  const c = obj(consent);
  const state = lower(c?.state);
  return state === null ? undefined : dated(firstIso(c?.consent_updated_at) ?? fallbackAt, { state });
}

/** An address's city, country and province, or undefined when it names none of them. */
export function addressValue(a: Obj | null): NonNullable<CustomerFacts['address']>['value'] | undefined {
  if (!a) return undefined;
  const value = {
    city: str(a.city),
    countryCode: str(a.country_code)?.toUpperCase() ?? null,
    provinceCode: str(a.province_code)?.toUpperCase() ?? null,
  };
  return value.city === null && value.countryCode === null && value.provinceCode === null ? undefined : value;
}

/**
 * What a REST customer object tells, as of `at` (its updated_at, else the caller's time). Keys a
 * payload leaves out stay unknown; older API versions' consent, tags and counts are read too.
 */
export function restCustomerFacts(c: Obj, at: string): CustomerFacts {
  const facts: CustomerFacts = {};
  const email = chooseEmail(c.email).email;
  if (email !== null) facts.email = dated(at, email);
  if ('first_name' in c || 'last_name' in c) facts.name = dated(at, { firstName: str(c.first_name), lastName: str(c.last_name) });
  if ('phone' in c) facts.phone = dated(at, str(c.phone));
  const addresses = [obj(c.default_address), ...(Array.isArray(c.addresses) ? c.addresses.map(obj) : [])];
  const address = addresses.map(addressValue).find((a) => a !== undefined);
  if (address) facts.address = dated(at, address);
  const consent = emailConsentFact(c.email_marketing_consent, at, c.accepts_marketing);
  if (consent) facts.emailConsent = consent;
  const sms = smsConsentFact(c.sms_marketing_consent, at);
  if (sms) facts.smsConsent = sms;
  if ('tags' in c) {
    const tags = splitTags(c.tags);
    if (tags !== null) facts.tags = dated(at, { set: tags });
  }
  const count = int(c.orders_count);
  const spent = money(c.total_spent);
  if (count !== null || spent !== null) {
    facts.purchases = dated(at, {
      ordersCount: count,
      totalSpent: spent,
      currency: key(c.currency),
      lastOrderId: id(c.last_order_id),
    });
  }
  const locale = key(c.locale);
  if (locale !== null) facts.locale = dated(at, locale);
  return facts;
}

/** The time a customer payload speaks for: its updated_at, else created_at, else when it reached us. */
export function customerTime(c: Obj, receivedAt: Date): string {
  return firstIso(c.updated_at, c.created_at) ?? receivedAt.toISOString();
}

/**
 * What an order (or checkout) tells about its customer: the customer object's own facts, and for
 * an order its creation time and the buyer's locale. The embedded customer often has no
 * updated_at: it then speaks for the order's time.
 */
export function purchaseFacts(purchase: Obj, customer: Obj, receivedAt: Date, isOrder: boolean): CustomerFacts {
  const orderTime = firstIso(purchase.created_at, purchase.processed_at, purchase.updated_at) ?? receivedAt.toISOString();
  // the address a customer account has is customers/update's word (email_changed keys on it):
  // an order's copy of it would hide the change
  const { email: _email, ...facts } = restCustomerFacts(customer, firstIso(customer.updated_at) ?? orderTime);
  if (isOrder) {
    facts.orderAt = orderTime;
    const locale = key(purchase.customer_locale);
    if (locale !== null) facts.locale = dated(orderTime, locale);
  }
  return facts;
}

/**
 * The profile of an order's or checkout's customer with the purchase's facts merged in, or null
 * for a guest. `input.profile` is the stored profile of that customer (lookupKeys names it).
 */
export function purchaseProfile(purchase: Obj, input: Pick<MapInput, 'profile' | 'receivedAt'>, isOrder: boolean): CustomerProfile | null {
  const customer = obj(purchase.customer);
  const customerId = objectId(customer);
  if (!customer || customerId === null) return null;
  return mergeFacts(input.profile ?? emptyProfile(customerId), purchaseFacts(purchase, customer, input.receivedAt, isOrder));
}

/** customers_email_marketing_consent/update: `customer_id`, `email_address`, `email_marketing_consent`. */
export function emailConsentTopicFacts(p: Obj, at: string): CustomerFacts {
  const facts: CustomerFacts = {};
  const consent = emailConsentFact(p.email_marketing_consent, at);
  if (consent) facts.emailConsent = consent;
  return facts;
}

/** customers_marketing_consent/update (SMS): `id`, `phone`, `sms_marketing_consent`. */
export function smsConsentTopicFacts(p: Obj, at: string): CustomerFacts {
  const facts: CustomerFacts = {};
  const sms = smsConsentFact(p.sms_marketing_consent, at);
  if (sms) facts.smsConsent = sms;
  return facts;
}

/** customer.tags_added / customer.tags_removed: `customerId` (gid), `tags` (the ones added or removed), `occurredAt`. */
export function tagTopicFacts(p: Obj, at: string, added: boolean): CustomerFacts {
  const tags = splitTags(p.tags) ?? [];
  return tags.length ? { tags: dated(at, added ? { added: tags } : { removed: tags }) } : {};
}

/** customers/purchasing_summary: `customerId`, `numberOfOrders`, `amountSpent{amount, currencyCode}`, `lastOrderId`, `occurredAt`. */
export function purchasingSummaryFacts(p: Obj, at: string): CustomerFacts {
  const spent = obj(p.amountSpent);
  return {
    purchases: dated(at, {
      ordersCount: int(p.numberOfOrders),
      totalSpent: money(spent?.amount),
      currency: key(spent?.currencyCode),
      lastOrderId: idOrGid(p.lastOrderId),
    }),
  };
}
