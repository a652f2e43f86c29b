// Turns drafts of events into messages, applying the merchant's switches and the email rule.
import type { EventName } from '../settings/settings';
import { describeValue } from './email';
import type { MapInput, MapOutput, NewMessage } from './types';

export interface Draft {
  eventName: EventName;
  /** Recorded as skipped, never sent (e.g. a checkout too old to be abandoned). */
  skip?: NonNullable<NewMessage['skip']>;
  sourceId: string;
  occurredAt: string;
  attributes: Record<string, unknown>;
  /** Defaults to receivedAt. */
  runAt?: Date;
  /** Refresh if still queued (checkout_abandoned) instead of insert-if-absent. */
  upsert?: boolean;
  /** A deferred customer_updated, coalesced per customer (NewMessage.coalesce). */
  coalesce?: boolean;
}

export interface Subject {
  email: string | null;
  /** The reason recorded when no email is given, e.g. 'no email on the order'. */
  noEmail: string;
  /** An address that was given but is not one (chooseEmail's `unusable`). */
  unusableEmail?: string | null;
  /**
   * Without any email: 'skip' records the events as skipped (shown in the delivery log); 'ignore'
   * records nothing (a checkout, whose email the guest often types after the first webhook).
   */
  withoutEmail?: 'skip' | 'ignore';
  customerId: string | null;
  checkoutToken: string | null;
  orderId?: string | null;
  contact: Record<string, unknown>;
}

export function ignored(reason: string, customerId: string | null = null): MapOutput {
  return { ignored: reason, messages: [], upserts: [], customerId };
}

function turnedOff(names: EventName[]): string {
  const unique = [...new Set(names)];
  if (unique.length === 1) return `event ${unique[0]} is turned off`;
  return `events ${unique.slice(0, -1).join(', ')} and ${unique[unique.length - 1]} are turned off`;
}

/**
 * Builds the output for one webhook. `extra` carries cancelAbandoned and the state to store
 * (profile, orderSummary, fulfillmentState), which the intake applies even when nothing
 * is forwarded.
 */
export function assemble(
  input: MapInput,
  subject: Subject,
  drafts: Draft[],
  extra: Pick<MapOutput, 'cancelAbandoned' | 'profile' | 'orderSummary' | 'fulfillmentState' | 'purchase'> & { whenEmpty?: string } = {},
): MapOutput {
  const { whenEmpty, ...rest } = extra;
  const base = { ...rest, messages: [] as NewMessage[], upserts: [] as NewMessage[], customerId: subject.customerId };
  if (drafts.length === 0) return { ...base, ignored: whenEmpty ?? 'nothing to forward' };
  const enabled = drafts.filter((d) => input.settings.events[d.eventName]);
  if (enabled.length === 0) return { ...base, ignored: turnedOff(drafts.map((d) => d.eventName)) };
  const email = subject.email;
  let skip: NewMessage['skip'];
  if (email === null) {
    if (subject.unusableEmail) {
      skip = {
        kind: 'invalid_email',
        reason: `${describeValue(subject.unusableEmail)} is not a valid email address; the service would refuse it`,
      };
    } else if (subject.withoutEmail === 'ignore') {
      return { ...base, ignored: subject.noEmail };
    } else {
      skip = { kind: 'no_email', reason: subject.noEmail };
    }
  }
  for (const d of enabled) {
    const message: NewMessage = {
      sourceId: d.sourceId,
      eventName: d.eventName,
      topic: input.topic,
      email,
      customerId: subject.customerId,
      checkoutToken: subject.checkoutToken,
      runAt: d.runAt ?? input.receivedAt,
      body: {
        event_name: d.eventName,
        email: email ?? '',
        ...subject.contact,
        event_attribute: { shop_domain: input.shopDomain, source_id: d.sourceId, occurred_at: d.occurredAt, ...d.attributes },
      },
    };
    if (subject.orderId !== undefined) message.orderId = subject.orderId;
    if (d.coalesce) message.coalesce = true;
    const why = skip ?? d.skip;
    if (why) message.skip = why;
    (d.upsert ? base.upserts : base.messages).push(message);
  }
  return skip ? { ...base, ignored: skip.reason } : base;
}
