// The one table of events: which Shopify topic becomes which events, and who maps it.
import type { EventName } from '../settings/settings';
import { ignored } from './build';
import { mapCheckout } from './checkouts';
import { mapCustomerCreated, mapCustomerUpdated } from './customers';
import { mapOrderCancelled, mapOrderCreated, mapOrderFulfilled, mapOrderPaid } from './orders';
import { id, obj } from './read';
import { mapRefundCreated } from './refunds';
import type { MapInput, MapOutput } from './types';

/** Topic → the events it can produce (checkout_abandoned is delayed; product_ordered is off by default). */
export const EVENT_TABLE = {
  'orders/create': ['order_placed', 'product_ordered'],
  'orders/paid': ['order_paid'],
  'orders/fulfilled': ['order_fulfilled'],
  'orders/cancelled': ['order_cancelled'],
  'refunds/create': ['order_refunded'],
  'checkouts/create': ['checkout_started', 'checkout_abandoned'],
  'checkouts/update': ['checkout_started', 'checkout_abandoned'],
  'customers/create': ['customer_created', 'email_subscribed'],
  'customers/update': ['customer_updated', 'email_subscribed', 'email_unsubscribed'],
} as const satisfies Record<string, readonly EventName[]>;

export type ForwardedTopic = keyof typeof EVENT_TABLE;

const MAPPERS: Record<ForwardedTopic, (input: MapInput) => MapOutput> = {
  'orders/create': mapOrderCreated,
  'orders/paid': mapOrderPaid,
  'orders/fulfilled': mapOrderFulfilled,
  'orders/cancelled': mapOrderCancelled,
  'refunds/create': mapRefundCreated,
  'checkouts/create': mapCheckout,
  'checkouts/update': mapCheckout,
  'customers/create': mapCustomerCreated,
  'customers/update': mapCustomerUpdated,
};

export function isForwardedTopic(topic: string): topic is ForwardedTopic {
  return Object.prototype.hasOwnProperty.call(EVENT_TABLE, topic);
}

/** Accepts 'orders/create' as well as the library's 'ORDERS_CREATE'. */
export function normalizeTopic(topic: string): string {
  const t = topic.trim().toLowerCase();
  if (t.includes('/')) return t;
  // the library's form: ORDERS_CREATE, BULK_OPERATIONS_FINISH (the first word is the resource)
  const known = ['bulk_operations', 'app', 'shop', 'customers', 'orders', 'refunds', 'checkouts'].find((r) => t.startsWith(`${r}_`));
  return known ? `${known}/${t.slice(known.length + 1)}` : t.replace('_', '/');
}

/**
 * What the intake must look up before mapping: the stored customerState (customers/*) and the
 * last known order email (refunds/create).
 */
export function lookupKeys(topic: string, payload: unknown): { customerId: string | null; orderId: string | null } {
  const t = normalizeTopic(topic);
  const o = obj(payload);
  return {
    customerId: t.startsWith('customers/') && t !== 'customers/redact' && t !== 'customers/data_request' ? id(o?.id) : null,
    orderId: t === 'refunds/create' ? id(o?.order_id) : null,
  };
}

/** Maps one webhook into messages to store. Pure: no I/O, no clock but input.receivedAt. */
export function mapWebhook(input: MapInput): MapOutput {
  const topic = normalizeTopic(input.topic);
  if (!isForwardedTopic(topic)) return ignored('topic not forwarded');
  return MAPPERS[topic]({ ...input, topic });
}

export { parseWebhookBody, InvalidJsonError } from './parse';
export { digestCustomer, contactProperties, pickEmail, consentState } from './contact';
export { buildTestEvent, TEST_EVENT_NAME, TEST_EVENT_TOPIC } from './test-event';
export { refundAmount } from './refunds';
export type { MapInput, MapOutput, NewMessage, SendEventBody } from './types';
