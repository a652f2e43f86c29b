// customers/create and customers/update → customer_created / customer_updated and consent events.
import type { EventName } from '../settings/settings';
import { assemble, ignored, type Draft, type Subject } from './build';
import { chooseEmail, consentState, contactProperties, digestCustomer } from './contact';
import { firstIso, obj, objectId, type Obj } from './read';
import type { MapInput, MapOutput } from './types';

/** How close consent_updated_at must be to updated_at to count as this update's change. */
const SAME_CHANGE_MS = 5 * 60_000;

interface Customer {
  raw: Obj;
  id: string;
  subject: Subject;
  consent: string | null;
  state: NonNullable<MapOutput['customerState']>;
}

function read(input: MapInput): Customer | null {
  const raw = obj(input.payload);
  const customerId = objectId(raw);
  if (!raw || customerId === null) return null;
  const { email, unusable } = chooseEmail(raw.email);
  const addresses = [obj(raw.default_address), ...(Array.isArray(raw.addresses) ? raw.addresses.map(obj) : [])];
  const contact = contactProperties({ customer: raw, addresses }, input.settings);
  const consent = consentState(raw);
  const digest = digestCustomer({ email, consentState: consent, properties: contact });
  return {
    raw,
    id: customerId,
    consent,
    subject: { email, unusableEmail: unusable, noEmail: 'no email on the customer', customerId, checkoutToken: null, contact },
    state: { customerId, digest, consentState: consent },
  };
}

function consentDraft(input: MapInput, c: Customer, eventName: EventName, fallback: unknown): Draft {
  const consentAt = obj(c.raw.email_marketing_consent)?.consent_updated_at;
  return {
    eventName,
    sourceId: `${input.webhookId}:${eventName}`,
    occurredAt: firstIso(consentAt, fallback) ?? input.receivedAt.toISOString(),
    attributes: { customer_id: c.id, email_marketing_state: c.consent },
  };
}

export function mapCustomerCreated(input: MapInput): MapOutput {
  const c = read(input);
  if (!c) return ignored('payload is not a customer');
  const created: Draft = {
    eventName: 'customer_created',
    sourceId: input.webhookId,
    occurredAt: firstIso(c.raw.created_at) ?? input.receivedAt.toISOString(),
    attributes: { customer_id: c.id },
  };
  // A state is stored for this customer only if a later update got here first (Shopify does
  // not promise order): this create is stale, so it sends no contact properties (they would
  // overwrite newer ones), keeps the stored state, and leaves consent to the update.
  if (input.customerState) return assemble(input, { ...c.subject, contact: {} }, [created]);
  const drafts: Draft[] = [created];
  if (c.consent === 'subscribed') drafts.push(consentDraft(input, c, 'email_subscribed', c.raw.created_at));
  return assemble(input, c.subject, drafts, { customerState: c.state });
}

/**
 * Which consent event this update is, if any. With a stored state, any move across
 * "subscribed" counts. Without one (first time we see the customer) we only trust a consent
 * change stamped at the same moment as the update, so old subscribers are not re-announced.
 */
function consentTransition(input: MapInput, c: Customer): EventName | null {
  if (c.consent === null) return null;
  const now = c.consent === 'subscribed';
  if (input.customerState) {
    const was = input.customerState.consentState === 'subscribed';
    return was === now ? null : now ? 'email_subscribed' : 'email_unsubscribed';
  }
  const consentAt = firstIso(obj(c.raw.email_marketing_consent)?.consent_updated_at);
  const updatedAt = firstIso(c.raw.updated_at);
  if (consentAt === null || updatedAt === null) return null;
  if (Math.abs(Date.parse(updatedAt) - Date.parse(consentAt)) > SAME_CHANGE_MS) return null;
  if (now) return 'email_subscribed';
  return c.consent === 'unsubscribed' ? 'email_unsubscribed' : null;
}

export function mapCustomerUpdated(input: MapInput): MapOutput {
  const c = read(input);
  if (!c) return ignored('payload is not a customer');
  const occurredAt = firstIso(c.raw.updated_at) ?? input.receivedAt.toISOString();
  const drafts: Draft[] = [];
  if (!input.customerState || input.customerState.digest !== c.state.digest) {
    drafts.push({ eventName: 'customer_updated', sourceId: input.webhookId, occurredAt, attributes: { customer_id: c.id } });
  }
  const transition = consentTransition(input, c);
  if (transition) drafts.push(consentDraft(input, c, transition, c.raw.updated_at));
  return assemble(input, c.subject, drafts, { customerState: c.state, whenEmpty: 'no mapped property or consent changed' });
}
