// The customer topics: customers/create and customers/update (customer_created, customer_updated,
// email_changed and the consent events), and the topics that carry what API 2025-01 took out of
// the customer payload: email and SMS consent, tags added and removed, the purchasing summary.
// Each merges its facts into the customer's profile (profile.ts) by their own times, so arrival
// order never matters; an event then carries the selected properties of the merged profile.
// A change that no event carries goes as one customer_updated about a minute later (deferred),
// unless another event for the customer carries it first.
import type { EventName } from '../settings/settings';
import { assemble, ignored, type Draft, type Subject } from './build';
import { chooseEmail, consentState, contactProperties, digestCustomer } from './contact';
import {
  customerTime,
  emailConsentTopicFacts,
  idOrGid,
  purchasingSummaryFacts,
  restCustomerFacts,
  smsConsentTopicFacts,
  tagTopicFacts,
} from './customer-facts';
import { emptyProfile, mergeFacts, type CustomerFacts, type CustomerProfile } from './profile';
import { firstIso, id, obj, objectId, type Obj } from './read';
import type { MapInput, MapOutput } from './types';

/** How close consent_updated_at must be to updated_at to count as this update's change. */
const SAME_CHANGE_MS = 5 * 60_000;

/**
 * How long a profile change no event carried waits before its customer_updated: an order or a
 * consent event for the customer within that time carries it instead (the purchasing summary
 * follows each order by seconds).
 */
export const PROFILE_UPDATE_DELAY_MS = 60_000;

/** Where a consent fact came from: what a first sight of the customer's consent may announce. */
type ConsentRule =
  /** the consent topic: it fires on a change, so any subscribed or unsubscribed state is one */
  | 'topic'
  /** a new customer: subscribed at creation is announced */
  | 'created'
  /** an older API version's customers/update: only a consent stamped with the update itself */
  | 'updated';

interface Merged {
  before: CustomerProfile | null;
  after: CustomerProfile;
  contact: Record<string, unknown>;
  email: string | null;
  digest: string;
}

/**
 * The payload's facts merged into the stored profile. `email`: where its events go, given the
 * merged profile (a customer payload's own address, or the newer one kept; a fact topic's
 * profile address, else the one its payload names).
 */
function merge(input: MapInput, customerId: string, facts: CustomerFacts, email: (p: CustomerProfile) => string | null): Merged {
  const before = input.profile ?? null;
  const after = mergeFacts(before ?? emptyProfile(customerId), facts);
  const contact = contactProperties({ profile: after, addresses: [] }, input.settings);
  const to = email(after);
  return {
    before,
    after,
    contact,
    email: to,
    digest: digestCustomer({ email: to, consentState: consentState(after), properties: contact }),
  };
}

/**
 * The consent event this payload's fact makes, if any. A consent the profile already had, or an
 * older one, makes none. Against a known earlier state, any move across "subscribed" counts; on
 * first sight, the rule of the fact's source decides (old subscribers are never re-announced).
 */
function consentTransition(m: Merged, rule: ConsentRule, updatedAt?: string | null): EventName | null {
  const fact = m.after.emailConsent;
  const state = fact?.value.state ?? null;
  if (!fact || state === null || fact === m.before?.emailConsent) return null;
  const now = state === 'subscribed';
  const known = m.before?.emailConsent?.value.state ?? null;
  if (known !== null) {
    const was = known === 'subscribed';
    return was === now ? null : now ? 'email_subscribed' : 'email_unsubscribed';
  }
  switch (rule) {
    case 'topic':
      return now ? 'email_subscribed' : state === 'unsubscribed' ? 'email_unsubscribed' : null;
    case 'created':
      return now ? 'email_subscribed' : null;
    case 'updated':
      // a customer announced before without a consent was not subscribed; one never seen has
      // a consent of any age, and only one stamped with this update is its change
      if (m.before?.sentDigest) return now ? 'email_subscribed' : null;
      if (!updatedAt || Math.abs(Date.parse(updatedAt) - Date.parse(fact.at)) > SAME_CHANGE_MS) return null;
      return now ? 'email_subscribed' : state === 'unsubscribed' ? 'email_unsubscribed' : null;
  }
}

function consentDraft(input: MapInput, m: Merged, eventName: EventName): Draft {
  return {
    eventName,
    sourceId: `${input.webhookId}:${eventName}`,
    occurredAt: m.after.emailConsent!.at,
    attributes: { customer_id: m.after.customerId, email_marketing_state: consentState(m.after) },
  };
}

function subject(m: Merged, unusable: string | null, noEmail: string): Subject {
  return {
    email: m.email,
    unusableEmail: unusable,
    noEmail,
    customerId: m.after.customerId,
    checkoutToken: null,
    contact: m.contact,
  };
}

/** The profile to store: what was announced is what this payload's enabled events carry. */
function announced(m: Merged): CustomerProfile {
  return { ...m.after, sentDigest: m.digest };
}

interface CustomerPayload {
  raw: Obj;
  id: string;
  /** The payload's own address, if usable. */
  email: string | null;
  unusable: string | null;
  at: string;
}

function readCustomer(input: MapInput): CustomerPayload | null {
  const raw = obj(input.payload);
  const customerId = objectId(raw);
  if (!raw || customerId === null) return null;
  const { email, unusable } = chooseEmail(raw.email);
  return { raw, id: customerId, email, unusable, at: customerTime(raw, input.receivedAt) };
}

/** A customer payload's events go to its address, or to the newer one the profile kept (a late create). */
const customerEmail = (c: CustomerPayload) => (p: CustomerProfile) => (c.email === null ? null : (p.email?.value ?? c.email));

export function mapCustomerCreated(input: MapInput): MapOutput {
  const c = readCustomer(input);
  if (!c) return ignored('payload is not a customer');
  const m = merge(input, c.id, restCustomerFacts(c.raw, c.at), customerEmail(c));
  const drafts: Draft[] = [
    {
      eventName: 'customer_created',
      sourceId: input.webhookId,
      occurredAt: firstIso(c.raw.created_at) ?? input.receivedAt.toISOString(),
      attributes: { customer_id: c.id },
    },
  ];
  // an update that got here first already holds newer facts: the merge kept them, and its
  // consent is not announced again
  const transition = consentTransition(m, 'created');
  if (transition) drafts.push(consentDraft(input, m, transition));
  return assemble(input, subject(m, c.unusable, 'no email on the customer'), drafts, { profile: announced(m) });
}

export function mapCustomerUpdated(input: MapInput): MapOutput {
  const c = readCustomer(input);
  if (!c) return ignored('payload is not a customer');
  const m = merge(input, c.id, restCustomerFacts(c.raw, c.at), customerEmail(c));
  const drafts: Draft[] = [];
  const previous = m.before?.email?.value;
  if (previous !== undefined && m.email !== null && previous !== m.email) {
    drafts.push({
      eventName: 'email_changed',
      sourceId: `${input.webhookId}:email_changed`,
      occurredAt: c.at,
      attributes: { customer_id: c.id, previous_email: previous },
    });
  }
  if (!m.before?.sentDigest || m.before.sentDigest !== m.digest) {
    drafts.push({ eventName: 'customer_updated', sourceId: input.webhookId, occurredAt: c.at, attributes: { customer_id: c.id } });
  }
  const transition = consentTransition(m, 'updated', firstIso(c.raw.updated_at));
  if (transition) drafts.push(consentDraft(input, m, transition));
  return assemble(input, subject(m, c.unusable, 'no email on the customer'), drafts, {
    profile: announced(m),
    whenEmpty: 'no mapped property or consent changed',
  });
}

/** A fact topic's time: the payload's own, else when Shopify fired the webhook, else when it reached us. */
function factTime(input: MapInput, ...own: unknown[]): string {
  return firstIso(...own, input.triggeredAt?.toISOString()) ?? input.receivedAt.toISOString();
}

/**
 * A topic that only changes the profile. Its events (a consent change) carry the new properties;
 * when none goes out and a selected property changed, a customer_updated follows after
 * PROFILE_UPDATE_DELAY_MS, coalesced with any the customer already has waiting.
 */
function profileFact(
  input: MapInput,
  customerId: string | null,
  facts: CustomerFacts,
  opts: { email?: unknown; rule?: ConsentRule } = {},
): MapOutput {
  if (customerId === null) return ignored('the payload names no customer');
  const m = merge(input, customerId, facts, (p) => p.email?.value ?? chooseEmail(opts.email).email);
  const changed = JSON.stringify(m.after) !== JSON.stringify(m.before ?? emptyProfile(customerId));
  if (!changed) return ignored('nothing newer than what is known of the customer', customerId);
  const drafts: Draft[] = [];
  const transition = opts.rule ? consentTransition(m, opts.rule) : null;
  if (transition) drafts.push(consentDraft(input, m, transition));
  const carried = drafts.some((d) => input.settings.events[d.eventName]) && m.email !== null;
  const sent = m.before?.sentDigest ?? null;
  if (carried || m.email === null || sent === m.digest) {
    // the events carry the change, or there is no address to send it to yet (the customer's next
    // event carries it), or nothing selected changed
    const profile = carried ? announced(m) : m.after;
    return assemble(input, subject(m, null, 'no email known for the customer'), drafts, {
      profile,
      whenEmpty: m.email === null ? 'no email known for the customer yet: kept for its next event' : 'no selected property changed',
    });
  }
  drafts.push({
    eventName: 'customer_updated',
    sourceId: `profile:${customerId}:${input.webhookId}`,
    occurredAt: factTime(input),
    attributes: { customer_id: customerId },
    runAt: new Date(input.receivedAt.getTime() + PROFILE_UPDATE_DELAY_MS),
    coalesce: true,
  });
  return assemble(input, subject(m, null, 'no email known for the customer'), drafts, { profile: announced(m) });
}

export function mapEmailConsentUpdate(input: MapInput): MapOutput {
  const p = obj(input.payload);
  if (!p) return ignored('payload is not a consent update');
  const at = factTime(input, obj(p.email_marketing_consent)?.consent_updated_at);
  return profileFact(input, idOrGid(p.customer_id), emailConsentTopicFacts(p, at), { email: p.email_address, rule: 'topic' });
}

export function mapSmsConsentUpdate(input: MapInput): MapOutput {
  const p = obj(input.payload);
  if (!p) return ignored('payload is not a consent update');
  const at = factTime(input, obj(p.sms_marketing_consent)?.consent_updated_at);
  return profileFact(input, idOrGid(p.id ?? p.customer_id), smsConsentTopicFacts(p, at));
}

export function mapTagsAdded(input: MapInput): MapOutput {
  const p = obj(input.payload);
  if (!p) return ignored('payload is not a tags change');
  return profileFact(input, idOrGid(p.customerId), tagTopicFacts(p, factTime(input, p.occurredAt), true));
}

export function mapTagsRemoved(input: MapInput): MapOutput {
  const p = obj(input.payload);
  if (!p) return ignored('payload is not a tags change');
  return profileFact(input, idOrGid(p.customerId), tagTopicFacts(p, factTime(input, p.occurredAt), false));
}

export function mapPurchasingSummary(input: MapInput): MapOutput {
  const p = obj(input.payload);
  if (!p) return ignored('payload is not a purchasing summary');
  return profileFact(input, idOrGid(p.customerId), purchasingSummaryFacts(p, factTime(input, p.occurredAt)));
}

/** The customer a customer-topic payload names (lookupKeys: its profile is read before mapping). */
export function customerIdOf(topic: string, p: Obj | null): string | null {
  if (!p) return null;
  switch (topic) {
    case 'customers_email_marketing_consent/update':
      return idOrGid(p.customer_id);
    case 'customers_marketing_consent/update':
      return idOrGid(p.id ?? p.customer_id);
    case 'customer.tags_added':
    case 'customer.tags_removed':
    case 'customers/purchasing_summary':
      return idOrGid(p.customerId);
    default:
      return id(p.id);
  }
}
