// The contract between the pure mappers and the intake transaction that stores their output.
import type { Settings } from '../settings/settings';
import type { LineItem, ProductLookup } from './items';
import type { CustomerProfile } from './profile';

/**
 * What we keep about an order (stored from every orders/* webhook), so that topics that name an
 * order without describing it (fulfillments, fulfillment events) can still reach its customer.
 */
export interface StoredOrder {
  /** Exact decimal string: Shopify ids exceed 2^53. */
  orderId: string;
  orderName: string | null;
  orderNumber: number | null;
  /** Trimmed and lower-cased, as messages carry it. */
  email: string | null;
  customerId: string | null;
  currency: string | null;
  /** The first MAX_LINE_ITEMS of the order's line items. */
  lineItems: LineItem[];
  /** True when the order had more line items than are kept. */
  lineItemsTruncated?: boolean;
}

/** What we keep about a fulfillment between its webhooks (fulfillments/*, fulfillment_events/create). */
export interface StoredFulfillment {
  fulfillmentId: string;
  orderId: string | null;
  orderName: string | null;
  trackingCompany: string | null;
  trackingNumbers: string[];
  trackingUrls: string[];
  /** The fulfilled line items (the first MAX_LINE_ITEMS), when a fulfillments/* payload named them; else empty. */
  lineItems: LineItem[];
  /** True when the fulfillment named more line items than are kept. */
  lineItemsTruncated?: boolean;
  email: string | null;
  /**
   * Shipping events already emitted for this fulfillment (event names). An event that fell due
   * while the merchant had it turned off counts too: a switch applies to what happens while it is
   * on, and the order of statuses must hold either way (see src/mapping/fulfillments.ts).
   */
  sent: string[];
}

export interface MapInput {
  /** e.g. 'orders/create' (lower-case with slash). */
  topic: string;
  /** The result of parseWebhookBody. */
  payload: unknown;
  /** X-Shopify-Webhook-Id: the default source_id. */
  webhookId: string;
  shopDomain: string;
  /** occurred_at fallback and the clock for runAt. */
  receivedAt: Date;
  settings: Settings;
  /**
   * What the app remembers of the customer the payload names (profile.ts): null if never seen,
   * absent when the payload names no customer.
   */
  profile?: CustomerProfile | null;
  /** X-Shopify-Triggered-At: the time of a fact whose payload carries none. */
  triggeredAt?: Date | null;
  /**
   * refunds/create carries no email: the intake looks up the email of the last order message
   * it stored for payload.order_id and passes it here. The shipping topics use it as a last
   * fallback (lookupKeys names the order for them too).
   */
  orderEmail?: string | null;
  /** fulfillments/*, fulfillment_events/create: what we stored about this fulfillment; null if never seen. */
  fulfillment?: StoredFulfillment | null;
  /** fulfillments/*, fulfillment_events/create: the stored summary of its order; null if unknown. */
  order?: StoredOrder | null;
  /** When abandoned checkouts fire; the defaults of config.ts when absent. */
  abandonment?: AbandonmentPolicy;
  /** Product images and links of the payload's line items, looked up before mapping. */
  products?: ProductLookup;
}

export interface AbandonmentPolicy {
  /**
   * The least time between a late checkout reaching us and its abandonment: a checkout delivered
   * late (a retry after an outage, a replay) leaves its order time to arrive and cancel it. A
   * prompt checkout fires at its delay and is not held by this.
   */
  graceMs: number;
  /** A checkout older than this when it arrives gets no abandonment at all. */
  maxAgeMs: number;
  /** How long after its last activity a checkout may reach us and still count as prompt (LATE_AFTER_MS when absent). */
  lateAfterMs?: number;
}

/**
 * A checkout that reaches us more than this after its last activity (updated_at, else created_at)
 * is late. Shopify delivers within seconds, 30 s and more at busy times; a minute's margin keeps
 * those prompt, while its retries after a failure come minutes to hours later.
 */
export const LATE_AFTER_MS = 60_000;

export const DEFAULT_ABANDONMENT: AbandonmentPolicy = { graceMs: 10 * 60_000, maxAgeMs: 7 * 24 * 3_600_000 };

/** Why a message is recorded but never sent. */
export type SkipKind = 'no_email' | 'invalid_email' | 'checkout_too_old';

export interface SendEventBody {
  event_name: string;
  email: string;
  event_attribute: Record<string, unknown>;
  [contactProperty: string]: unknown;
}

export interface NewMessage {
  /** Stable across redeliveries: the webhook id, or a derived id for derived events. */
  sourceId: string;
  eventName: string;
  topic: string;
  email: string | null;
  customerId: string | null;
  checkoutToken: string | null;
  /** Set on order and refund messages, so the intake can find an order's email later. */
  orderId?: string | null;
  runAt: Date;
  /** The exact send-event body. */
  body: SendEventBody;
  /** Set when the message is recorded as skipped (never sent), with the reason for the log. */
  skip?: { kind: SkipKind; reason: string };
  /**
   * A deferred customer_updated (customers.ts): one waits per customer at a time, later changes
   * refresh its body, and an event for the customer that carries its properties first cancels it.
   */
  coalesce?: boolean;
}

export interface MapOutput {
  /** Set when nothing is forwarded: a reason a merchant can read. */
  ignored?: string;
  /** Insert if absent (by sourceId). */
  messages: NewMessage[];
  /** Insert, or refresh body/runAt/email if still queued (checkout_abandoned). */
  upserts: NewMessage[];
  /** Cancel queued checkout_abandoned messages with this token or email. */
  cancelAbandoned?: { checkoutToken: string | null; email: string | null };
  /** The customer's profile with this payload's facts merged in: store it, and hand it to the next receipt about them. */
  profile?: CustomerProfile;
  /**
   * New state to store for the fulfillment (fulfillments/*, fulfillment_events/create), `sent`
   * updated. Store it in the same transaction as the messages, and hand it to the next webhook
   * of the fulfillment: dedupe across topics and arrival orders depends on it.
   */
  fulfillmentState?: StoredFulfillment;
  /** The order's summary to store (orders/*), even when its event is ignored. */
  orderSummary?: StoredOrder;
  /** orders/create: the email bought these variants (a shopper's interest in them is then met). */
  purchase?: { email: string; variantIds: string[]; at: Date };
  /** For the receipt (redaction link). */
  customerId: string | null;
}
