// Storefront batches as the web pixel sends them (extensions/email-pixel/README.md, wire format;
// with the product fields older bundles still send, which the app ignores), and the steps that
// make a stack's shop take them.
import { randomUUID } from 'node:crypto';
import { DEFAULT_SHOP, type Stack } from './stack';

export const PIXEL_SCOPES = ['write_pixels', 'read_customer_events', 'read_products'];

/** Grants the pixel scopes (signed app/scopes_update) and activates the shop's pixel; returns its key. */
export async function activatePixel(s: Stack, domain = DEFAULT_SHOP): Promise<string> {
  await s.webhook('app/scopes_update', s.shop.grantScopes(domain, PIXEL_SCOPES), { domain });
  const row = await s.until(
    async () => {
      const shop = await s.app.db.shop.findUnique({ where: { domain }, include: { pixel: true } });
      if (shop?.pixel?.state === 'active') return shop.pixel;
      // an activation that started before the grant may have finished as missing_scopes
      await s.api('POST', '/api/pixel/activate', undefined, domain);
      return null;
    },
    10_000,
    'the storefront pixel to be active',
  );
  return row.key;
}

export interface Product {
  id: string;
  title: string;
  variantId: string;
  price: number;
  handle?: string;
}

export const MUG: Product = { id: '8101', title: 'Aurora Mug', variantId: '45101', price: 18, handle: 'aurora-mug' };
export const TOTE: Product = { id: '8102', title: 'Canvas Tote', variantId: '45102', price: 24, handle: 'canvas-tote' };
export const BEANIE: Product = { id: '8103', title: 'Wool Beanie', variantId: '45103', price: 29.5, handle: 'wool-beanie' };

/** The shop's Admin API knows `email` as a customer's: a claim to it is vouched for by a lookup. */
export function knownCustomer(s: Stack, email: string, domain = DEFAULT_SHOP): string {
  s.shop.addCustomer(domain, { email });
  return email;
}

/** What Shopify says of a product of the simulated shop (sandbox/fake-shop/catalog.ts), as storefront events carry it. */
export function shopifyProduct(s: Stack, p: Product, domain = DEFAULT_SHOP) {
  const handle = p.handle ?? p.id;
  return {
    product_id: p.id,
    product_title: p.title,
    variant_id: p.variantId,
    variant_title: 'Default Title',
    price: p.price,
    currency: 'USD',
    product_url: `https://${domain}/products/${handle}`,
    image_url: `${s.shop.url}/_sandbox/product-images/${handle}.svg`,
  };
}

const STORE = 'https://demo-store.myshopify.com';

function variant(p: Product) {
  return {
    id: p.variantId,
    title: 'Default Title',
    sku: `SKU-${p.id}`,
    price: { amount: p.price, currencyCode: 'USD' },
    image: { src: `//cdn.example/${p.handle ?? p.id}.png?v=1&email=leak@example.com` },
    product: { id: p.id, title: p.title, url: `/products/${p.handle ?? p.id}`, vendor: 'Demo Store', type: 'Kitchen' },
  };
}

const event = <T>(name: string, data: T, at: Date, url: string) => ({
  id: `sh-${randomUUID()}`,
  name,
  timestamp: at.toISOString(),
  url,
  data,
});

/** Events in the pixel's shapes; `at` defaults to now, page URLs carry a query string to strip. */
export const ev = {
  page: (at = new Date(), path = '/') => event('page_viewed', {}, at, `${STORE}${path}?utm_source=mail&email=leak@example.com`),
  view: (p: Product, at = new Date()) =>
    event(
      'product_viewed',
      { productVariant: variant(p) },
      at,
      `${STORE}/products/${p.handle ?? p.id}?utm_campaign=x&email=leak@example.com`,
    ),
  add: (p: Product, quantity = 1, at = new Date()) =>
    event(
      'product_added_to_cart',
      { cartLine: { quantity, cost: { totalAmount: { amount: p.price * quantity, currencyCode: 'USD' } }, merchandise: variant(p) } },
      at,
      `${STORE}/products/${p.handle ?? p.id}`,
    ),
  checkout: (at = new Date()) =>
    event(
      'checkout_started',
      { checkout: { token: `c-${randomUUID()}`, currencyCode: 'USD', totalPrice: { amount: 24, currencyCode: 'USD' } } },
      at,
      `${STORE}/checkouts/cn/1`,
    ),
  contact: (at = new Date()) =>
    event(
      'checkout_contact_info_submitted',
      { checkout: { token: 'c-1', currencyCode: 'USD' } },
      at,
      `${STORE}/checkouts/cn/1/information`,
    ),
  search: (query: string, at = new Date()) => event('search_submitted', { searchResult: { query } }, at, `${STORE}/search?q=${query}`),
};

/** A batch's text, its first keys in the pixel's order (v, key, client_id). */
export function batch(key: string, clientId: string, events: unknown[], opts: { email?: string; marketing?: boolean | null } = {}): string {
  const marketing = opts.marketing === undefined ? true : opts.marketing;
  return JSON.stringify({
    v: 1,
    key,
    client_id: clientId,
    consent: { marketing, analytics: true },
    customer: opts.email ? { email: opts.email } : null,
    events,
  });
}

/** POSTs a body to /pixel/events as a beacon would. */
export async function postPixel(
  s: Stack,
  body: string | Buffer,
  contentType: string | null = 'text/plain;charset=UTF-8',
  origin = STORE,
): Promise<{ status: number; headers: Headers; text: string }> {
  const headers: Record<string, string> = { origin };
  if (contentType !== null) headers['content-type'] = contentType;
  const res = await fetch(`${s.app.url}/pixel/events`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Sends a batch and waits until stage 2 has processed it. */
export async function sendBatch(s: Stack, body: string): Promise<number> {
  const res = await postPixel(s, body);
  if (res.status === 204) await s.settle();
  return res.status;
}
