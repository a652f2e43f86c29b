// Generated, realistic Shopify payloads for the simulated shop (npm run dev), benchmarks and
// the fake shop's bulk operations. Deterministic for a given n, so runs are repeatable.
const FIRST = ['Ava', 'Liam', 'Mia', 'Noah', 'Zoe', 'Omar', 'Ines', 'Kenji', 'Sara', 'Luca'];
const LAST = ['Martin', 'Khan', 'Silva', 'Novak', 'Dubois', 'Okafor', 'Tanaka', 'Rossi', 'Berg', 'Lopez'];
const CITIES: Array<[string, string]> = [
  ['Paris', 'FR'],
  ['Berlin', 'DE'],
  ['Toronto', 'CA'],
  ['Austin', 'US'],
  ['Lisbon', 'PT'],
];
const PRODUCTS: Array<[string, string, string]> = [
  ['Linen Shirt', 'M / Sand', '49.00'],
  ['Canvas Tote', 'Natural', '24.50'],
  ['Wool Beanie', 'Charcoal', '19.99'],
  ['Trail Socks', 'L', '12.00'],
];

const pick = <T>(arr: T[], n: number): T => arr[n % arr.length]!;
const money = (n: number) => n.toFixed(2);

export function sampleCustomer(n: number, domain = 'demo-store.myshopify.com') {
  const first = pick(FIRST, n);
  const last = pick(LAST, Math.floor(n / FIRST.length));
  const [city, country] = pick(CITIES, n);
  const subscribed = n % 3 !== 0;
  const at = new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString();
  return {
    id: 7_000_000_000_000 + n,
    email: `${first}.${last}.${n}@example.com`.toLowerCase(),
    first_name: first,
    last_name: last,
    phone: n % 4 === 0 ? `+1555${String(1_000_000 + n).slice(-7)}` : null,
    state: 'enabled',
    tags: n % 5 === 0 ? 'vip, newsletter' : '',
    orders_count: n % 7,
    total_spent: money((n % 7) * 37.5),
    created_at: at,
    updated_at: at,
    email_marketing_consent: {
      state: subscribed ? 'subscribed' : 'not_subscribed',
      opt_in_level: subscribed ? 'single_opt_in' : null,
      consent_updated_at: subscribed ? at : null,
    },
    default_address: { city, country_code: country, zip: '10001' },
    addresses: [{ city, country_code: country, zip: '10001', default: true }],
    admin_graphql_api_id: `gid://shopify/Customer/${7_000_000_000_000 + n}`,
    _shop: domain,
  };
}

/**
 * A customer as API 2025-01 and later send it (customers/create, customers/update): no consent,
 * tags or order counts, which arrive on topics of their own (the samples below).
 */
export function sampleCustomer2026(n: number, domain = 'demo-store.myshopify.com') {
  const { email_marketing_consent: _consent, tags: _tags, orders_count: _count, total_spent: _spent, ...rest } = sampleCustomer(n, domain);
  return rest;
}

/** customers_email_marketing_consent/update for sample customer n. */
export function sampleEmailConsent(n: number, state: 'subscribed' | 'unsubscribed' | 'not_subscribed', at = new Date()) {
  const c = sampleCustomer(n);
  return {
    customer_id: c.id,
    email_address: c.email,
    email_marketing_consent: { state, opt_in_level: state === 'subscribed' ? 'single_opt_in' : null, consent_updated_at: at.toISOString() },
  };
}

/** customers_marketing_consent/update (SMS) for sample customer n. */
export function sampleSmsConsent(n: number, state: 'subscribed' | 'unsubscribed' | 'not_subscribed', at = new Date()) {
  const c = sampleCustomer(n);
  return {
    id: c.id,
    phone: c.phone ?? `+1555${String(3_000_000 + n).slice(-7)}`,
    sms_marketing_consent: {
      state,
      opt_in_level: state === 'subscribed' ? 'single_opt_in' : null,
      consent_updated_at: at.toISOString(),
      consent_collected_from: 'SHOPIFY',
    },
  };
}

/** customer.tags_added / customer.tags_removed for sample customer n. */
export function sampleTags(n: number, tags: string[], at = new Date()) {
  return { customerId: sampleCustomer(n).admin_graphql_api_id, tags, occurredAt: at.toISOString() };
}

/** customers/purchasing_summary for sample customer n. */
export function samplePurchasingSummary(n: number, orders: number, spent: number, at = new Date()) {
  return {
    customerId: sampleCustomer(n).admin_graphql_api_id,
    numberOfOrders: orders,
    amountSpent: { amount: money(spent), currencyCode: 'USD' },
    lastOrderId: `gid://shopify/Order/${5_000_000_000_000 + n}`,
    occurredAt: at.toISOString(),
  };
}

export function sampleOrder(n: number, opts: { customer?: number; checkoutToken?: string; createdAt?: Date } = {}) {
  const c = sampleCustomer(opts.customer ?? n);
  const items = [pick(PRODUCTS, n), pick(PRODUCTS, n + 1)].slice(0, 1 + (n % 2));
  const subtotal = items.reduce((s, [, , p], i) => s + Number(p) * (1 + ((n + i) % 2)), 0);
  const tax = Math.round(subtotal * 0.2 * 100) / 100;
  const id = 5_000_000_000_000 + n;
  const at = (opts.createdAt ?? new Date(Date.UTC(2026, 5, 1) + n * 60_000)).toISOString();
  return {
    id,
    admin_graphql_api_id: `gid://shopify/Order/${id}`,
    email: c.email,
    contact_email: c.email,
    name: `#${1000 + n}`,
    order_number: 1000 + n,
    created_at: at,
    processed_at: at,
    updated_at: at,
    currency: 'USD',
    total_price: money(subtotal + tax),
    subtotal_price: money(subtotal),
    total_tax: money(tax),
    total_discounts: '0.00',
    financial_status: 'paid',
    fulfillment_status: null,
    checkout_token: opts.checkoutToken ?? null,
    discount_codes: n % 4 === 0 ? [{ code: 'WELCOME10', amount: '5.00', type: 'fixed_amount' }] : [],
    order_status_url: `https://demo-store.myshopify.com/orders/${id}/authenticate?key=k${n}`,
    tags: '',
    test: false,
    customer: {
      id: c.id,
      email: c.email,
      first_name: c.first_name,
      last_name: c.last_name,
      phone: c.phone,
      email_marketing_consent: c.email_marketing_consent,
      default_address: c.default_address,
    },
    line_items: items.map(([title, variant, price], i) => ({
      id: id * 10 + i,
      product_id: 8_000_000_000 + ((n + i) % 4),
      variant_id: 9_000_000_000 + ((n + i) % 4),
      title,
      variant_title: variant,
      sku: `SKU-${(n + i) % 4}`,
      vendor: 'Demo',
      quantity: 1 + ((n + i) % 2),
      price,
    })),
    shipping_address: {
      first_name: c.first_name,
      last_name: c.last_name,
      city: c.default_address.city,
      country_code: c.default_address.country_code,
      zip: '10001',
    },
    billing_address: {
      first_name: c.first_name,
      last_name: c.last_name,
      city: c.default_address.city,
      country_code: c.default_address.country_code,
      zip: '10001',
    },
    fulfillments: [],
    refunds: [],
  };
}

export function sampleCheckout(n: number, opts: { completed?: boolean; at?: Date } = {}) {
  const c = sampleCustomer(n);
  const token = `ck${n.toString(16).padStart(30, '0')}`;
  const at = (opts.at ?? new Date()).toISOString();
  const [title, variant, price] = pick(PRODUCTS, n);
  return {
    id: 3_000_000_000 + n,
    token,
    cart_token: `cart${n}`,
    email: c.email,
    phone: null,
    created_at: at,
    updated_at: at,
    completed_at: opts.completed ? at : null,
    currency: 'USD',
    total_price: price,
    subtotal_price: price,
    abandoned_checkout_url: `https://demo-store.myshopify.com/checkouts/${token}/recover?key=r${n}`,
    line_items: [
      {
        product_id: 8_000_000_000 + (n % 4),
        variant_id: 9_000_000_000 + (n % 4),
        title,
        variant_title: variant,
        sku: `SKU-${n % 4}`,
        quantity: 1,
        price,
      },
    ],
    customer: {
      id: c.id,
      email: c.email,
      first_name: c.first_name,
      last_name: c.last_name,
      email_marketing_consent: c.email_marketing_consent,
    },
  };
}

/** The shipment statuses the simulated carrier reports, in order (fulfillment_events/create). */
export const SHIPMENT_SEQUENCE = ['in_transit', 'out_for_delivery', 'delivered'] as const;
const EVENT_STATUSES = ['confirmed', 'label_printed', 'in_transit', 'out_for_delivery', 'attempted_delivery', 'delivered', 'failure'];
const HOUR = 3_600_000;

const fulfillmentId = (n: number) => 4_000_000_000_000 + n;
const trackingNumber = (n: number) => `1Z999AA1${String(n).padStart(10, '0')}`;

/** When the fulfillment of sample order `order` is created: a day after the order. */
function fulfilledAt(order: ReturnType<typeof sampleOrder>): Date {
  return new Date(Date.parse(order.created_at) + 24 * HOUR);
}

/**
 * A fulfillments/create (or /update) payload: fulfillment `n` of sample order `opts.order`
 * (default n), shipped by UPS with one tracking number unless `tracked` is false.
 */
export function sampleFulfillment(
  n: number,
  opts: { order?: number; tracked?: boolean; shipmentStatus?: string | null; status?: string; updatedAt?: Date } = {},
) {
  const order = sampleOrder(opts.order ?? n);
  const id = fulfillmentId(n);
  const tracked = opts.tracked ?? true;
  const number = trackingNumber(n);
  const url = `https://www.ups.com/track?loc=en_US&tracknum=${number}`;
  const createdAt = fulfilledAt(order).toISOString();
  return {
    id,
    order_id: order.id,
    status: opts.status ?? 'success',
    created_at: createdAt,
    service: 'manual',
    updated_at: (opts.updatedAt ?? new Date(createdAt)).toISOString(),
    tracking_company: tracked ? 'UPS' : null,
    shipment_status: opts.shipmentStatus ?? null,
    location_id: 905684977,
    origin_address: null,
    email: order.email,
    destination: { ...order.shipping_address },
    line_items: order.line_items.map((li) => ({
      ...li,
      fulfillment_service: 'manual',
      fulfillment_status: 'fulfilled',
      requires_shipping: true,
      gift_card: false,
    })),
    tracking_number: tracked ? number : null,
    tracking_numbers: tracked ? [number] : [],
    tracking_url: tracked ? url : null,
    tracking_urls: tracked ? [url] : [],
    receipt: {},
    name: `${order.name}.1`,
    admin_graphql_api_id: `gid://shopify/Fulfillment/${id}`,
  };
}

/**
 * A fulfillment_events/create payload: the carrier reports `status` for fulfillment `n` (of
 * sample order `opts.order`, default n). Dated six hours apart along the carrier's statuses.
 */
export function sampleFulfillmentEvent(n: number, status: string, opts: { order?: number; at?: Date } = {}) {
  const order = sampleOrder(opts.order ?? n);
  const step = Math.max(0, EVENT_STATUSES.indexOf(status));
  const at = (opts.at ?? new Date(fulfilledAt(order).getTime() + (step + 1) * 6 * HOUR)).toISOString();
  const [city, country] = [order.shipping_address.city, order.shipping_address.country_code];
  const id = 6_000_000_000_000 + n * 16 + step;
  const delivered = status === 'delivered';
  return {
    id,
    fulfillment_id: fulfillmentId(n),
    status,
    message: status.replace(/_/g, ' '),
    happened_at: at,
    city,
    province: null,
    country,
    zip: order.shipping_address.zip,
    address1: null,
    latitude: null,
    longitude: null,
    shop_id: 548380009,
    created_at: at,
    updated_at: at,
    estimated_delivery_at: delivered ? null : new Date(fulfilledAt(order).getTime() + 48 * HOUR).toISOString(),
    order_id: order.id,
    admin_graphql_api_id: `gid://shopify/FulfillmentEvent/${id}`,
  };
}
