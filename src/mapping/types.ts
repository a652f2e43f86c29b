// The contract between the pure mappers and the intake transaction that stores their output.
import type { Settings } from '../settings/settings';

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
  /** What we last stored for this customer (customers/* topics); null if never seen. */
  customerState?: { digest: string; consentState: string | null } | null;
  /**
   * refunds/create carries no email: the intake looks up the email of the last order message
   * it stored for payload.order_id and passes it here.
   */
  orderEmail?: string | null;
}

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
  /** New state to store for the customer (customers/create|update). */
  customerState?: { customerId: string; digest: string; consentState: string | null };
  /** For the receipt (redaction link). */
  customerId: string | null;
}
