// Historical import: Admin GraphQL bulk objects (customers, orders with their line items) →
// outbox messages. The GraphQL shape is adapted to the REST-like shape the live mappers read,
// so an imported order carries exactly the event_attribute of order_placed (plus historical).
// Pure: no I/O, no clock but ctx.now.
import type { Settings } from '../settings/settings';
import { chooseEmail, contactProperties, customerFor, purchaseContact } from './contact';
import { purchaseFacts, restCustomerFacts } from './customer-facts';
import { emptyProfile, mergeFacts, type CustomerFacts, type CustomerProfile } from './profile';
import { lineItemIds, type ProductLookup } from './items';
import { orderAttributes } from './orders';
import { arr, firstIso, int, obj, str, type Obj } from './read';
import type { NewMessage } from './types';

export const IMPORT_TOPIC = { customers: 'import/customers', orders: 'import/orders' } as const;

export interface ImportContext {
  shopDomain: string;
  settings: Settings;
  /** runAt of the messages, and occurred_at when the object has no date. */
  now: Date;
  /** Product images and links of the line items, looked up before mapping. */
  products?: ProductLookup;
  /** The stored profile of a customer, read before mapping (null: none). */
  profile?: (customerId: string) => CustomerProfile | null;
  /**
   * When the bulk operation was asked for: the time of the facts it gives (a consent keeps its
   * own). A live fact after it is newer and wins. Defaults to `now`.
   */
  factsAt?: string;
}

/** The message to queue, or why none; and the customer's profile with the import's facts merged in. */
export type ImportResult = ({ message: NewMessage } | { skipped: string }) & { profile?: CustomerProfile };

const GID = /^gid:\/\/shopify\/[A-Za-z]+\/(\d+)(?:\?.*)?$/;

/** The numeric id of a gid (`gid://shopify/Order/123` → `123`); live payloads use the numeric form. */
export function legacyId(v: unknown): string | null {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  const s = str(v);
  if (s === null) return null;
  return GID.exec(s)?.[1] ?? s;
}

export const importSourceId = (kind: 'customer' | 'order', id: string) => `import:${kind}:${id}`;

const lower = (v: unknown) => str(v)?.toLowerCase() ?? null;

/** `{shopMoney: {amount}}` (a MoneyBag) or a plain amount. */
function amountOf(v: unknown): string | null {
  const o = obj(v);
  if (!o) return typeof v === 'number' ? String(v) : str(v);
  return str(obj(o.shopMoney)?.amount) ?? str(o.amount);
}

function currencyOf(...values: unknown[]): string | null {
  for (const v of values) {
    const o = obj(v);
    const c = str(obj(o?.shopMoney)?.currencyCode) ?? str(o?.currencyCode);
    if (c) return c;
  }
  return null;
}

/** MailingAddress → the REST address fields the mappers read. */
export function restAddress(v: unknown): Obj | null {
  const a = obj(v);
  if (!a) return null;
  return {
    first_name: a.firstName ?? null,
    last_name: a.lastName ?? null,
    city: a.city ?? null,
    zip: a.zip ?? null,
    province_code: a.provinceCode ?? null,
    country_code: a.countryCodeV2 ?? a.countryCode ?? null,
    phone: a.phone ?? null,
  };
}

/**
 * Customer (GraphQL) → REST customer. Reads the current fields (defaultEmailAddress,
 * defaultPhoneNumber) and falls back to the older ones (email, phone, emailMarketingConsent).
 */
export function restCustomer(c: Obj): Obj {
  const address = obj(c.defaultEmailAddress);
  const legacy = obj(c.emailMarketingConsent);
  const state = lower(address?.marketingState) ?? lower(legacy?.marketingState);
  const phone = obj(c.defaultPhoneNumber);
  // 2026-10: smsMarketingConsent on the phone number; the flat fields before it
  const sms = obj(phone?.smsMarketingConsent);
  const smsState =
    lower(sms?.state) ?? lower(sms?.marketingState) ?? lower(phone?.marketingState) ?? lower(obj(c.smsMarketingConsent)?.marketingState);
  return {
    id: legacyId(c.id),
    email: str(address?.emailAddress) ?? str(c.email),
    first_name: c.firstName ?? null,
    last_name: c.lastName ?? null,
    phone: str(obj(c.defaultPhoneNumber)?.phoneNumber) ?? str(c.phone),
    tags: Array.isArray(c.tags) ? c.tags : (c.tags ?? null),
    email_marketing_consent: state
      ? {
          state,
          opt_in_level: lower(address?.marketingOptInLevel) ?? lower(legacy?.marketingOptInLevel),
          consent_updated_at: address?.marketingUpdatedAt ?? legacy?.consentUpdatedAt ?? null,
        }
      : null,
    sms_marketing_consent: smsState
      ? {
          state: smsState,
          opt_in_level: lower(sms?.optInLevel) ?? lower(sms?.marketingOptInLevel) ?? lower(phone?.marketingOptInLevel),
          consent_updated_at: sms?.updatedAt ?? sms?.consentUpdatedAt ?? phone?.marketingUpdatedAt ?? null,
        }
      : null,
    locale: c.locale ?? null,
    default_address: restAddress(c.defaultAddress),
    orders_count: int(c.numberOfOrders),
    total_spent: amountOf(c.amountSpent),
    currency: currencyOf(c.amountSpent),
    created_at: c.createdAt ?? null,
    updated_at: c.updatedAt ?? null,
  };
}

/** LineItem (a child line of the order in the bulk file) → REST line item. */
/** The product and variant ids of bulk line items: what to look up before mapping their order. */
export function importedLineItemIds(lineItems: Obj[]): Array<{ product_id: string | null; variant_id: string | null }> {
  return lineItemIds(lineItems.map(restLineItem));
}

export function restLineItem(li: Obj): Obj {
  return {
    id: legacyId(li.id),
    product_id: legacyId(obj(li.product)?.id),
    variant_id: legacyId(obj(li.variant)?.id),
    title: li.title ?? li.name ?? null,
    variant_title: li.variantTitle ?? null,
    sku: li.sku ?? null,
    quantity: li.quantity ?? null,
    price: amountOf(li.originalUnitPriceSet) ?? amountOf(li.originalUnitPrice),
  };
}

function orderNumber(o: Obj): number | null {
  const n = int(o.number);
  if (n !== null) return n;
  const digits = /(\d+)/.exec(str(o.name) ?? '');
  return digits ? int(digits[1]) : null;
}

/** Order (GraphQL) plus its line items → REST order. */
export function restOrder(o: Obj, lineItems: Obj[]): Obj {
  return {
    id: legacyId(o.id),
    name: o.name ?? null,
    order_number: orderNumber(o),
    email: o.email ?? null,
    contact_email: null,
    created_at: o.createdAt ?? null,
    processed_at: o.processedAt ?? null,
    currency: str(o.currencyCode) ?? currencyOf(o.totalPriceSet),
    total_price: amountOf(o.totalPriceSet),
    subtotal_price: amountOf(o.subtotalPriceSet),
    total_tax: amountOf(o.totalTaxSet),
    total_discounts: amountOf(o.totalDiscountsSet),
    discount_codes: arr(o.discountCodes).map((code) => ({ code })),
    order_status_url: o.statusPageUrl ?? null,
    customer_locale: o.customerLocale ?? null,
    customer: obj(o.customer) ? restCustomer(obj(o.customer)!) : null,
    shipping_address: restAddress(o.shippingAddress),
    billing_address: restAddress(o.billingAddress),
    line_items: lineItems.map(restLineItem),
  };
}

function message(
  ctx: ImportContext,
  m: Omit<NewMessage, 'runAt' | 'body' | 'checkoutToken'> & {
    occurredAt: string;
    contact: Record<string, unknown>;
    attributes: Record<string, unknown>;
  },
): NewMessage {
  const email = m.email!;
  const out: NewMessage = {
    sourceId: m.sourceId,
    eventName: m.eventName,
    topic: m.topic,
    email,
    customerId: m.customerId,
    checkoutToken: null,
    runAt: ctx.now,
    body: {
      event_name: m.eventName,
      email,
      ...m.contact,
      event_attribute: { shop_domain: ctx.shopDomain, source_id: m.sourceId, occurred_at: m.occurredAt, ...m.attributes, historical: true },
    },
  };
  if (m.orderId !== undefined) out.orderId = m.orderId;
  return out;
}

/** The customer a bulk line names (a customer, or an order's customer): its profile is read before mapping. */
export function importedCustomerId(kind: 'customers' | 'orders', line: Obj): string | null {
  return legacyId(kind === 'customers' ? line.id : obj(line.customer)?.id);
}

/** The customer's stored profile with the import's facts merged in. */
function importedProfile(ctx: ImportContext, customerId: string, facts: CustomerFacts): CustomerProfile {
  return mergeFacts(ctx.profile?.(customerId) ?? emptyProfile(customerId), facts);
}

/** One customer line of the bulk file → customer_imported (or its configured name). */
export function mapImportedCustomer(line: Obj, ctx: ImportContext): ImportResult {
  const c = restCustomer(line);
  const id = str(c.id);
  if (id === null) return { skipped: 'not a customer' };
  const facts = restCustomerFacts(c, ctx.factsAt ?? ctx.now.toISOString());
  const lastOrderAt = firstIso(obj(line.lastOrder)?.createdAt);
  if (lastOrderAt !== null) facts.orderAt = lastOrderAt;
  const profile = importedProfile(ctx, id, facts);
  const { email, unusable } = chooseEmail(c.email);
  if (email === null) return { skipped: unusable ? 'not a valid email address' : 'no email on the customer', profile };
  const contact = contactProperties({ profile, addresses: [] }, ctx.settings);
  return {
    profile,
    message: message(ctx, {
      sourceId: importSourceId('customer', id),
      eventName: ctx.settings.import_event_names.customer_imported,
      topic: IMPORT_TOPIC.customers,
      email,
      customerId: id,
      occurredAt: firstIso(c.created_at, c.updated_at) ?? ctx.now.toISOString(),
      contact,
      attributes: {
        customer_id: id,
        orders_count: c.orders_count,
        total_spent: c.total_spent === null ? null : Number(c.total_spent),
        currency: c.currency,
      },
    }),
  };
}

/** One order and its line items → order_imported (or its configured name). */
export function mapImportedOrder(line: Obj, lineItems: Obj[], ctx: ImportContext): ImportResult {
  const order = restOrder(line, lineItems);
  const id = str(order.id);
  if (id === null) return { skipped: 'not an order' };
  const rawCustomer = obj(order.customer);
  const customerId = legacyId(rawCustomer?.id);
  const profile =
    rawCustomer && customerId !== null
      ? importedProfile(ctx, customerId, purchaseFacts(order, rawCustomer, new Date(ctx.factsAt ?? ctx.now), true))
      : undefined;
  const { email, unusable } = chooseEmail(order.email, order.contact_email, rawCustomer?.email);
  if (email === null) return { skipped: unusable ? 'not a valid email address' : 'no email on the order', profile };
  const contact = purchaseContact(order, customerFor(email, rawCustomer) ? (profile ?? null) : null, ctx.settings);
  return {
    profile,
    message: message(ctx, {
      sourceId: importSourceId('order', id),
      eventName: ctx.settings.import_event_names.order_imported,
      topic: IMPORT_TOPIC.orders,
      email,
      customerId,
      orderId: id,
      occurredAt: firstIso(order.created_at, order.processed_at) ?? ctx.now.toISOString(),
      contact,
      attributes: orderAttributes(order, ctx.products),
    }),
  };
}

/** Children of an order in the bulk file that are line items (other nested objects are ignored). */
export function isLineItem(child: Obj): boolean {
  const id = str(child.id) ?? '';
  return id.startsWith('gid://shopify/LineItem/') || (id === '' && child.quantity !== undefined);
}
