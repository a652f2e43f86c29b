// What Shopify told the app about a customer, remembered per shop and customer id: since API
// 2025-01 a customer payload carries no consent, tags or order counts; each arrives on a topic of
// its own (customers_email_marketing_consent/update, customer.tags_added, customers/purchasing_summary,
// ...), in any order, repeated at will. Every fact is kept with the time Shopify gives it, and an
// older fact never replaces a newer one, so the profile is the same whatever the arrival order.
// Every event about the customer then carries the merchant's selected properties from it, an order
// whose own payload carries none of them included. Pure: no I/O, no clock.
import { normalizeEmail } from './email';
import { iso, type Obj } from './read';

/** A value with the time Shopify stamped it (ISO 8601 UTC). */
export interface Dated<T> {
  at: string;
  value: T;
}

export interface EmailConsent {
  /** subscribed | not_subscribed | unsubscribed | pending | redacted | invalid, lower-cased; null when only the legacy flag is known. */
  state: string | null;
  optInLevel: string | null;
  /** The legacy `accepts_marketing` flag of payloads older than email_marketing_consent. */
  accepts: boolean | null;
}

export interface Purchases {
  ordersCount: number | null;
  totalSpent: number | null;
  currency: string | null;
  lastOrderId: string | null;
}

export interface CustomerProfile {
  customerId: string;
  /** The customer's address (trimmed, lower-cased) as the newest customer payload gave it. */
  email: Dated<string> | null;
  /** Addresses the customer had before, newest first: a privacy request covers them too. */
  formerEmails: string[];
  name: Dated<{ firstName: string | null; lastName: string | null }> | null;
  phone: Dated<string | null> | null;
  /** The customer's default address: city, country and province codes. */
  address: Dated<{ city: string | null; countryCode: string | null; provinceCode: string | null }> | null;
  emailConsent: Dated<EmailConsent> | null;
  smsConsent: Dated<{ state: string }> | null;
  /** Each tag Shopify named for the customer, with whether it is on now and since when. */
  tags: Record<string, Dated<boolean>>;
  /** When Shopify last said anything of the customer's tags (an empty set included); null: never. */
  tagsAt: string | null;
  purchases: Dated<Purchases> | null;
  /** Creation times of the first and last orders seen (live or imported). */
  firstOrderAt: string | null;
  lastOrderAt: string | null;
  locale: Dated<string> | null;
  /**
   * What the customer-change stream (customer_created, customer_updated, consent) last announced:
   * a digest of the email, consent and selected properties, so customer_updated fires only on a
   * real change. Null until something was announced.
   */
  sentDigest: string | null;
}

/** Former addresses kept per customer; the oldest are forgotten first. */
export const MAX_FORMER_EMAILS = 20;
/** Tags remembered per customer (Shopify allows 250); removed ones are forgotten first, then the oldest. */
export const MAX_TAGS = 300;

export function emptyProfile(customerId: string): CustomerProfile {
  return {
    customerId,
    email: null,
    formerEmails: [],
    name: null,
    phone: null,
    address: null,
    emailConsent: null,
    smsConsent: null,
    tags: {},
    tagsAt: null,
    purchases: null,
    firstOrderAt: null,
    lastOrderAt: null,
    locale: null,
    sentDigest: null,
  };
}

/**
 * Facts one payload gives about a customer, each with its time. A tag change is either the whole
 * set (older payloads' `tags`) or a delta (customer.tags_added / tags_removed).
 */
export interface CustomerFacts {
  email?: Dated<string>;
  name?: NonNullable<CustomerProfile['name']>;
  phone?: NonNullable<CustomerProfile['phone']>;
  address?: NonNullable<CustomerProfile['address']>;
  emailConsent?: Dated<EmailConsent>;
  smsConsent?: Dated<{ state: string }>;
  tags?: Dated<{ set: string[] } | { added: string[] } | { removed: string[] }>;
  purchases?: Dated<Purchases>;
  /** An order of the customer, created at this time. */
  orderAt?: string;
  locale?: Dated<string>;
}

const min = (x: string | null, y: string | null) => (x === null ? y : y === null || x <= y ? x : y);
const max = (x: string | null, y: string | null) => (x === null ? y : y === null || x >= y ? x : y);

/** `b` replaces `a` when it is as new or newer: a repeated fact changes nothing, an older one loses. */
const newer = <T>(a: Dated<T> | null, b: Dated<T> | undefined): b is Dated<T> => b !== undefined && (a === null || b.at >= a.at);

/** The profile with the payload's facts applied, each only where it is not older than what is kept. */
export function mergeFacts(profile: CustomerProfile, facts: CustomerFacts): CustomerProfile {
  const next: CustomerProfile = { ...profile, tags: { ...profile.tags }, formerEmails: [...profile.formerEmails] };
  if (newer(profile.email, facts.email) && facts.email.value !== '') {
    const was = profile.email?.value;
    if (was !== undefined && was !== facts.email.value) {
      next.formerEmails = [was, ...next.formerEmails.filter((e) => e !== was && e !== facts.email!.value)].slice(0, MAX_FORMER_EMAILS);
    }
    next.email = facts.email;
  }
  if (newer(profile.name, facts.name)) next.name = facts.name;
  if (newer(profile.phone, facts.phone)) next.phone = facts.phone;
  if (newer(profile.address, facts.address)) next.address = facts.address;
  if (newer(profile.emailConsent, facts.emailConsent)) next.emailConsent = facts.emailConsent;
  if (newer(profile.smsConsent, facts.smsConsent)) next.smsConsent = facts.smsConsent;
  if (newer(profile.purchases, facts.purchases)) next.purchases = facts.purchases;
  if (newer(profile.locale, facts.locale)) next.locale = facts.locale;
  if (facts.orderAt) {
    next.firstOrderAt = min(next.firstOrderAt, facts.orderAt);
    next.lastOrderAt = max(next.lastOrderAt, facts.orderAt);
  }
  if (facts.tags) {
    next.tags = mergeTags(next.tags, facts.tags);
    next.tagsAt = max(next.tagsAt, facts.tags.at);
  }
  return next;
}

function mergeTags(tags: Record<string, Dated<boolean>>, change: NonNullable<CustomerFacts['tags']>): Record<string, Dated<boolean>> {
  const at = change.at;
  const set = (tag: string, on: boolean) => {
    const cur = tags[tag];
    if (cur === undefined || at >= cur.at) tags[tag] = { at, value: on };
  };
  const v = change.value;
  if ('set' in v) {
    const present = new Set(v.set);
    for (const tag of v.set) set(tag, true);
    for (const tag of Object.keys(tags)) if (!present.has(tag)) set(tag, false);
  } else if ('added' in v) {
    for (const tag of v.added) set(tag, true);
  } else {
    for (const tag of v.removed) set(tag, false);
  }
  return boundTags(tags);
}

function boundTags(tags: Record<string, Dated<boolean>>): Record<string, Dated<boolean>> {
  const entries = Object.entries(tags);
  if (entries.length <= MAX_TAGS) return tags;
  // removed tags first, then the oldest
  entries.sort(([, a], [, b]) => Number(b.value) - Number(a.value) || (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
  return Object.fromEntries(entries.slice(0, MAX_TAGS));
}

/**
 * Two versions of one customer's profile as one, each fact the newer of the two: what a writer
 * stores over a row another writer (stage 2, the historical import) may have changed since it
 * read it. The digest of what was announced is `b`'s when it has one (stage 2 announces).
 */
export function mergeProfiles(a: CustomerProfile, b: CustomerProfile): CustomerProfile {
  const pick = <T>(x: Dated<T> | null, y: Dated<T> | null): Dated<T> | null => (newer(x, y ?? undefined) ? y : x);
  const email = pick(a.email, b.email);
  const loser = email === a.email ? b.email : a.email;
  const former = [...b.formerEmails, ...a.formerEmails, ...(loser && loser.value !== email?.value ? [loser.value] : [])];
  const tags = { ...a.tags };
  for (const [tag, t] of Object.entries(b.tags)) if (tags[tag] === undefined || t.at >= tags[tag].at) tags[tag] = t;
  return {
    customerId: a.customerId,
    email,
    formerEmails: [...new Set(former)].filter((e) => e !== email?.value).slice(0, MAX_FORMER_EMAILS),
    name: pick(a.name, b.name),
    phone: pick(a.phone, b.phone),
    address: pick(a.address, b.address),
    emailConsent: pick(a.emailConsent, b.emailConsent),
    smsConsent: pick(a.smsConsent, b.smsConsent),
    tags: boundTags(tags),
    tagsAt: max(a.tagsAt, b.tagsAt),
    purchases: pick(a.purchases, b.purchases),
    firstOrderAt: min(a.firstOrderAt, b.firstOrderAt),
    lastOrderAt: max(a.lastOrderAt, b.lastOrderAt),
    locale: pick(a.locale, b.locale),
    sentDigest: b.sentDigest ?? a.sentDigest,
  };
}

/** The tags on now, sorted: one order whatever the order facts arrived in. */
export function currentTags(profile: CustomerProfile): string[] {
  return Object.entries(profile.tags)
    .filter(([, t]) => t.value)
    .map(([tag]) => tag)
    .sort();
}

/** Every address the profile knows for the customer, current first. */
export function profileEmails(profile: CustomerProfile | null): string[] {
  if (!profile) return [];
  return [...new Set([...(profile.email ? [profile.email.value] : []), ...profile.formerEmails])];
}

/** A profile as stored: JSON of the facts (the id, email and digest have columns of their own). */
export function serializeProfile(p: CustomerProfile): string {
  const { customerId: _id, sentDigest: _digest, ...facts } = p;
  return JSON.stringify(facts);
}

/** A profile as a CustomerProfile row holds it. */
export interface StoredProfile {
  shopId: string;
  customerId: string;
  email: string | null;
  data: string;
  digest: string | null;
}

export function storedProfile(shopId: string, p: CustomerProfile): StoredProfile {
  return { shopId, customerId: p.customerId, email: p.email?.value ?? null, data: serializeProfile(p), digest: p.sentDigest };
}

export function profileOfRow(row: StoredProfile): CustomerProfile {
  return parseProfile(row.customerId, row.data, row.digest);
}

/** What a writer stores over the row as it is at commit (db/customer-profiles.ts): both, fact by fact. */
export function mergeStored(current: StoredProfile | null, next: StoredProfile): StoredProfile {
  if (current === null || (current.data === next.data && current.digest === next.digest)) return next;
  return storedProfile(next.shopId, mergeProfiles(profileOfRow(current), profileOfRow(next)));
}

/** Reads a stored profile tolerantly: an unreadable part is treated as unknown. */
export function parseProfile(customerId: string, json: string | null, sentDigest: string | null): CustomerProfile {
  const base = emptyProfile(customerId);
  let o: Obj | null = null;
  try {
    const parsed: unknown = json ? JSON.parse(json) : null;
    o = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Obj) : null;
  } catch {
    o = null;
  }
  if (!o) return { ...base, sentDigest };
  const dated = <T>(v: unknown): Dated<T> | null => {
    const d = v as Dated<T> | null;
    return d && typeof d === 'object' && typeof d.at === 'string' && 'value' in d ? d : null;
  };
  const tags: Record<string, Dated<boolean>> = {};
  if (o.tags && typeof o.tags === 'object') {
    for (const [tag, t] of Object.entries(o.tags as Obj)) {
      const d = dated<boolean>(t);
      if (d && typeof d.value === 'boolean') tags[tag] = d;
    }
  }
  return {
    ...base,
    email: dated<string>(o.email),
    formerEmails: Array.isArray(o.formerEmails) ? o.formerEmails.filter((e): e is string => typeof e === 'string').map(normalizeEmail) : [],
    name: dated(o.name),
    phone: dated(o.phone),
    address: dated(o.address),
    emailConsent: dated(o.emailConsent),
    smsConsent: dated(o.smsConsent),
    tags,
    tagsAt: iso(o.tagsAt),
    purchases: dated(o.purchases),
    firstOrderAt: iso(o.firstOrderAt),
    lastOrderAt: iso(o.lastOrderAt),
    locale: dated(o.locale),
    sentDigest,
  };
}
