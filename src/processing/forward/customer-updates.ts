// What a forwarded batch does to the messages that follow a customer's profile (customers.ts,
// profile.ts): at most one deferred customer_updated waits per customer (a later change refreshes
// its body; an event for the customer that carries the same properties first cancels it), and a
// historical import still waiting takes the customer's newest properties, so it never sends an
// older consent over a newer live one. Decided in memory in arrival order; written in the
// batch's transaction through the plan.
import { contactProperties } from '../../mapping/contact';
import type { CustomerProfile } from '../../mapping/profile';
import type { NewMessage, SendEventBody } from '../../mapping/types';
import type { Settings } from '../../settings/settings';
import { keyOf, type PendingCustomerMessage, type WritePlan } from './forward-store';

/** Top-level keys of a send-event body that are not contact properties. */
const NOT_CONTACT = new Set(['event_name', 'email', 'event_attribute']);

/** Whether `m` carries everything the deferred update `d` would tell the service about the contact. */
function carries(m: NewMessage, d: { email: string | null; body: SendEventBody }): boolean {
  if (m.email !== d.email) return false;
  for (const [k, v] of Object.entries(d.body)) {
    if (NOT_CONTACT.has(k)) continue;
    if (JSON.stringify(m.body[k]) !== JSON.stringify(v)) return false;
  }
  return true;
}

interface Track {
  /** The stored deferred update still waiting, with its body as this batch left it. */
  stored?: { id: number; email: string | null; body: SendEventBody; refreshed: boolean };
  /** The deferred update this batch proposes (a candidate of the batch). */
  proposed?: { message: NewMessage; cancel(): void };
  history: PendingCustomerMessage[];
}

export class CustomerUpdates {
  private readonly tracks = new Map<string, Track>();
  private readonly cancels: Array<{ id: number; cancel: string }> = [];

  constructor(pending: Map<string, PendingCustomerMessage[]>) {
    for (const [k, list] of pending) {
      const deferred = list.find((m) => m.deferred);
      this.tracks.set(k, {
        stored: deferred && { id: deferred.id, email: deferred.email, body: JSON.parse(deferred.body) as SendEventBody, refreshed: false },
        history: list.filter((m) => !m.deferred),
      });
    }
  }

  private track(k: string): Track {
    let t = this.tracks.get(k);
    if (!t) this.tracks.set(k, (t = { history: [] }));
    return t;
  }

  /**
   * A deferred customer_updated of the batch: true when it is a new candidate to insert; false
   * when it refreshed the one already waiting (stored, or proposed earlier in the batch).
   */
  coalesce(shopId: string, m: NewMessage): boolean {
    const t = this.track(keyOf(shopId, m.customerId!));
    if (t.proposed) {
      Object.assign(t.proposed.message, { body: m.body, email: m.email });
      return false;
    }
    if (t.stored) {
      // the waiting one keeps its source id and its time; it now says what this one says
      t.stored = { ...t.stored, email: m.email, body: { ...m.body, event_attribute: t.stored.body.event_attribute }, refreshed: true };
      return false;
    }
    return true;
  }

  /** The deferred update `m` is, as proposed by the batch: a later event may still cancel it. */
  proposed(shopId: string, m: NewMessage, cancel: () => void): void {
    this.track(keyOf(shopId, m.customerId!)).proposed = { message: m, cancel };
  }

  /** Another event for the customer: the waiting deferred update goes if this one carries it. */
  sent(shopId: string, m: NewMessage): void {
    if (m.customerId === null || m.skip) return;
    const t = this.tracks.get(keyOf(shopId, m.customerId));
    if (!t) return;
    if (t.proposed && carries(m, t.proposed.message)) {
      t.proposed.cancel();
      t.proposed = undefined;
    }
    if (t.stored && carries(m, t.stored)) {
      this.cancels.push({ id: t.stored.id, cancel: `carried by ${m.eventName}` });
      t.stored = undefined;
    }
  }

  /**
   * Writes the batch's decisions into the plan: refreshed and cancelled deferred updates, and the
   * customers' waiting imports with their newest selected properties (`changed`: the profiles this
   * batch changed, with their shop's settings).
   */
  settle(plan: WritePlan, changed: Array<{ shopId: string; profile: CustomerProfile; settings: Settings }>): void {
    for (const t of this.tracks.values()) {
      if (t.stored?.refreshed) plan.customerMessages.push({ id: t.stored.id, body: JSON.stringify(t.stored.body), email: t.stored.email });
    }
    plan.customerMessages.push(...this.cancels);
    for (const { shopId, profile, settings } of changed) {
      const history = this.tracks.get(keyOf(shopId, profile.customerId))?.history ?? [];
      if (history.length === 0) continue;
      const contact = contactProperties({ profile, addresses: [] }, settings);
      for (const h of history) {
        // only where the import goes to the customer's own address
        if (profile.email !== null && profile.email.value !== h.email) continue;
        const body = JSON.parse(h.body) as SendEventBody;
        const next = { ...body, ...contact, event_attribute: body.event_attribute };
        const text = JSON.stringify(next);
        if (text !== h.body) plan.customerMessages.push({ id: h.id, body: text, email: h.email });
      }
    }
  }
}
