// The one table of events: which Shopify topic becomes which events, and who maps it.
import type { EventName } from '../settings/settings';
import { ignored } from './build';
import { mapCheckout } from './checkouts';
import {
  customerIdOf,
  mapCustomerCreated,
  mapCustomerUpdated,
  mapEmailConsentUpdate,
  mapPurchasingSummary,
  mapSmsConsentUpdate,
  mapTagsAdded,
  mapTagsRemoved,
} from './customers';
import { mapFulfillment } from './fulfillments';
import { mapOrderCancelled, mapOrderCreated, mapOrderFulfilled, mapOrderPaid } from './orders';
import { id, obj, objectId } from './read';
import { mapRefundCreated } from './refunds';
import type { MapInput, MapOutput } from './types';

/**
 * Topic → the events it can produce (checkout_abandoned is delayed; product_ordered is off by
 * default). A fulfillment's shipment_status makes fulfillments/* a status source too.
 */
export const EVENT_TABLE = {
  'orders/create': ['order_placed', 'product_ordered'],
  'orders/paid': ['order_paid'],
  'orders/fulfilled': ['order_fulfilled'],
  'orders/cancelled': ['order_cancelled'],
  'refunds/create': ['order_refunded'],
  'checkouts/create': ['checkout_started', 'checkout_abandoned'],
  'checkouts/update': ['checkout_started', 'checkout_abandoned'],
  'customers/create': ['customer_created', 'email_subscribed'],
  'customers/update': ['customer_updated', 'email_changed', 'email_subscribed', 'email_unsubscribed'],
  // what API 2025-01 took out of the customer payload, each on a topic of its own: a change no
  // event carries goes as a deferred customer_updated
  'customers_email_marketing_consent/update': ['email_subscribed', 'email_unsubscribed', 'customer_updated'],
  'customers_marketing_consent/update': ['customer_updated'],
  'customer.tags_added': ['customer_updated'],
  'customer.tags_removed': ['customer_updated'],
  'customers/purchasing_summary': ['customer_updated'],
  'fulfillments/create': ['order_shipped', 'shipment_out_for_delivery', 'shipment_delivered', 'shipment_delivery_failed'],
  'fulfillments/update': ['order_shipped', 'shipment_out_for_delivery', 'shipment_delivered', 'shipment_delivery_failed'],
  'fulfillment_events/create': ['shipment_out_for_delivery', 'shipment_delivered', 'shipment_delivery_failed'],
} as const satisfies Record<string, readonly EventName[]>;

export type ForwardedTopic = keyof typeof EVENT_TABLE;

/** The storefront's events, from the web pixel's batches (src/processing/storefront), not from webhooks. */
export const STOREFRONT_EVENT_TABLE = {
  'pixel/events': ['viewed_product', 'added_to_cart', 'browse_abandoned', 'cart_abandoned'],
} as const satisfies Record<string, readonly EventName[]>;

/**
 * Stock and price news, from the topics that signal them (side effects of stage 2), sent by the
 * product-alert runner (src/processing/product-alerts) to the variant's subscribers and viewers.
 */
export const PRODUCT_ALERT_EVENT_TABLE = {
  'variants/in_stock': ['back_in_stock'],
  'products/update': ['price_dropped'],
} as const satisfies Record<string, readonly EventName[]>;

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
  'customers_email_marketing_consent/update': mapEmailConsentUpdate,
  'customers_marketing_consent/update': mapSmsConsentUpdate,
  'customer.tags_added': mapTagsAdded,
  'customer.tags_removed': mapTagsRemoved,
  'customers/purchasing_summary': mapPurchasingSummary,
  'fulfillments/create': mapFulfillment,
  'fulfillments/update': mapFulfillment,
  'fulfillment_events/create': mapFulfillment,
};

export function isForwardedTopic(topic: string): topic is ForwardedTopic {
  return Object.prototype.hasOwnProperty.call(EVENT_TABLE, topic);
}

// Resources whose name has an underscore, or that must not be cut at their first one; the
// longest first, so 'fulfillment_events_create' is not read as a 'fulfillment' resource.
const RESOURCES = [
  'customers_email_marketing_consent',
  'customers_marketing_consent',
  'fulfillment_events',
  'bulk_operations',
  'fulfillments',
  'customers',
  'checkouts',
  'refunds',
  'orders',
  'shop',
  'app',
];

/** Accepts 'orders/create' as well as the library's 'ORDERS_CREATE' ('customer.tags_added': 'CUSTOMER_TAGS_ADDED'). */
export function normalizeTopic(topic: string): string {
  const t = topic.trim().toLowerCase();
  if (t.includes('/') || t.includes('.')) return t;
  if (t.startsWith('customer_tags_')) return `customer.${t.slice('customer_'.length)}`;
  // the library's form: ORDERS_CREATE, BULK_OPERATIONS_FINISH, FULFILLMENT_EVENTS_CREATE
  const known = RESOURCES.find((r) => t.startsWith(`${r}_`));
  return known ? `${known}/${t.slice(known.length + 1)}` : t.replace('_', '/');
}

const FULFILLMENT_TOPICS = new Set(['fulfillments/create', 'fulfillments/update', 'fulfillment_events/create']);

/** Customer topics whose payload names a customer whose profile is read before mapping. */
const CUSTOMER_TOPICS = new Set([
  'customers/create',
  'customers/update',
  'customers_email_marketing_consent/update',
  'customers_marketing_consent/update',
  'customer.tags_added',
  'customer.tags_removed',
  'customers/purchasing_summary',
]);

/**
 * What the intake must look up before mapping: the stored profile of the customer the payload
 * names (customer topics, and an order's or checkout's customer; a refund's and a shipment's come
 * from their stored order), the last known order email (refunds/create and the shipping topics),
 * and for the shipping topics the stored fulfillment (input.fulfillment) and order summary
 * (input.order).
 */
export function lookupKeys(
  topic: string,
  payload: unknown,
): { customerId: string | null; orderId: string | null; fulfillmentId: string | null } {
  const t = normalizeTopic(topic);
  const o = obj(payload);
  const shipping = FULFILLMENT_TOPICS.has(t);
  return {
    customerId: CUSTOMER_TOPICS.has(t)
      ? customerIdOf(t, o)
      : t.startsWith('orders/') || t.startsWith('checkouts/')
        ? objectId(obj(o?.customer))
        : null,
    orderId: t === 'refunds/create' || shipping ? id(o?.order_id) : null,
    fulfillmentId: shipping ? id(t === 'fulfillment_events/create' ? o?.fulfillment_id : o?.id) : null,
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
export { emptyProfile, parseProfile, profileEmails, serializeProfile, type CustomerProfile } from './profile';
export { buildTestEvent, TEST_EVENT_NAME, TEST_EVENT_TOPIC } from './test-event';
export { refundAmount } from './refunds';
export { orderSummaryOf } from './orders';
export { fulfillmentSourceId, STATUS_EVENTS } from './fulfillments';
export type { MapInput, MapOutput, NewMessage, SendEventBody, StoredFulfillment, StoredOrder } from './types';
