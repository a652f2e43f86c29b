// Generated, realistic Shopify payloads for the simulated shop (npm run dev), benchmarks and
// the fake shop's bulk operations. Deterministic for a given n, so runs are repeatable.
const FIRST = ['Ava', 'Liam', 'Mia', 'Noah', 'Zoe', 'Omar', 'Ines', 'Kenji', 'Sara', 'Luca'];
const LAST = ['Martin', 'Khan', 'Silva', 'Novak', 'Dubois', 'Okafor', 'Tanaka', 'Rossi', 'Berg', 'Lopez'];
const CITIES: Array<[string, string]> = [['Paris', 'FR'], ['Berlin', 'DE'], ['Toronto', 'CA'], ['Austin', 'US'], ['Lisbon', 'PT']];
const PRODUCTS: Array<[string, string, string]> = [['Linen Shirt', 'M / Sand', '49.00'], ['Canvas Tote', 'Natural', '24.50'], ['Wool Beanie', 'Charcoal', '19.99'], ['Trail Socks', 'L', '12.00']];

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
    email_marketing_consent: { state: subscribed ? 'subscribed' : 'not_subscribed', opt_in_level: subscribed ? 'single_opt_in' : null, consent_updated_at: subscribed ? at : null },
    default_address: { city, country_code: country, zip: '10001' },
    addresses: [{ city, country_code: country, zip: '10001', default: true }],
    admin_graphql_api_id: `gid://shopify/Customer/${7_000_000_000_000 + n}`,
    _shop: domain,
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
    customer: { id: c.id, email: c.email, first_name: c.first_name, last_name: c.last_name, phone: c.phone, email_marketing_consent: c.email_marketing_consent, default_address: c.default_address },
    line_items: items.map(([title, variant, price], i) => ({
      id: id * 10 + i, product_id: 8_000_000_000 + ((n + i) % 4), variant_id: 9_000_000_000 + ((n + i) % 4), title, variant_title: variant,
      sku: `SKU-${(n + i) % 4}`, vendor: 'Demo', quantity: 1 + ((n + i) % 2), price,
    })),
    shipping_address: { first_name: c.first_name, last_name: c.last_name, city: c.default_address.city, country_code: c.default_address.country_code, zip: '10001' },
    billing_address: { first_name: c.first_name, last_name: c.last_name, city: c.default_address.city, country_code: c.default_address.country_code, zip: '10001' },
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
    line_items: [{ product_id: 8_000_000_000 + (n % 4), variant_id: 9_000_000_000 + (n % 4), title, variant_title: variant, sku: `SKU-${n % 4}`, quantity: 1, price }],
    customer: { id: c.id, email: c.email, first_name: c.first_name, last_name: c.last_name, email_marketing_consent: c.email_marketing_consent },
  };
}
