// Shopify-shaped customer events (fields as in @shopify/web-pixels-extension's PixelEvents
// types), carrying more than the pixel keeps, so the tests see what trimming drops.

export const SHOP = 'https://demo-store.myshopify.com';
export const CLIENT_ID = 'a3f1c6e2-7b4d-4c1e-9f0a-1d2e3f4a5b6c';
const BASE_TIME = Date.parse('2026-11-23T10:00:00.000Z');

let seq = 0;
export function resetSeq(): void {
  seq = 0;
}

function context(pathname: string) {
  const href = `${SHOP}${pathname}`;
  const location = {
    hash: '',
    host: 'demo-store.myshopify.com',
    hostname: 'demo-store.myshopify.com',
    href,
    origin: SHOP,
    pathname,
    port: '',
    protocol: 'https:',
    search: '',
  };
  return {
    document: { characterSet: 'UTF-8', location, referrer: `${SHOP}/`, title: 'Demo Store' },
    navigator: { cookieEnabled: true, language: 'en-US', languages: ['en-US'], userAgent: 'Mozilla/5.0' },
    window: {
      innerHeight: 900,
      innerWidth: 1280,
      location,
      origin: SHOP,
      outerHeight: 900,
      outerWidth: 1280,
      pageXOffset: 0,
      pageYOffset: 0,
      screen: { height: 900, width: 1280 },
      screenX: 0,
      screenY: 0,
      scrollX: 0,
      scrollY: 0,
    },
  };
}

export interface ShopifyEvent {
  id: string;
  name: string;
  seq: number;
  type: 'standard';
  timestamp: string;
  clientId: string;
  context: ReturnType<typeof context>;
  data: Record<string, unknown>;
}

export function event(name: string, data: Record<string, unknown> = {}, opts: { path?: string; clientId?: string } = {}): ShopifyEvent {
  seq += 1;
  return {
    id: `sh-0000${seq}-test`,
    name,
    seq,
    type: 'standard',
    timestamp: new Date(BASE_TIME + seq * 1000).toISOString(),
    clientId: opts.clientId ?? CLIENT_ID,
    context: context(opts.path ?? '/'),
    data,
  };
}

export const variant = (n = 1) => ({
  id: `4${n}000000001`,
  title: 'Default Title',
  untranslatedTitle: 'Default Title',
  sku: `MUG-00${n}`,
  price: { amount: 18.5, currencyCode: 'USD' },
  image: { src: `//cdn.example/products/mug-${n}.png` },
  product: {
    id: `7${n}00000001`,
    title: `Aurora Mug ${n}`,
    untranslatedTitle: `Aurora Mug ${n}`,
    type: 'Kitchen',
    url: `/products/aurora-mug-${n}`,
    vendor: 'Demo Store',
  },
});

/** What of a variant leaves the browser: its id and its product's (the app takes the rest from Shopify). */
export const trimmedVariant = (n = 1) => ({
  id: `4${n}000000001`,
  product: { id: `7${n}00000001` },
});

export const cartLine = (n = 1, quantity = 2) => ({
  cost: { totalAmount: { amount: 18.5 * quantity, currencyCode: 'USD' } },
  merchandise: variant(n),
  quantity,
});

export const cart = () => ({
  id: 'Z2NwLXVzLWVhc3QxOjAxSEQ',
  attributes: [{ key: 'gift_note', value: 'for mum, from Jane Doe' }],
  cost: { totalAmount: { amount: 37, currencyCode: 'USD' } },
  lines: [cartLine(1, 2)],
  totalQuantity: 2,
});

export const CHECKOUT_EMAIL = 'jane.doe@example.com';

export const checkout = (email: string | null = CHECKOUT_EMAIL) => ({
  attributes: [],
  billingAddress: {
    address1: '1 Main St',
    city: 'Ottawa',
    country: 'Canada',
    firstName: 'Jane',
    lastName: 'Doe',
    phone: '+16135551111',
    zip: 'K1A 0B1',
  },
  buyerAcceptsEmailMarketing: true,
  buyerAcceptsSmsMarketing: false,
  currencyCode: 'USD',
  delivery: null,
  discountApplications: [],
  discountsAmount: { amount: 0, currencyCode: 'USD' },
  email,
  lineItems: [
    {
      discountAllocations: [],
      finalLinePrice: { amount: 37, currencyCode: 'USD' },
      id: 'line-1',
      properties: [],
      quantity: 2,
      sellingPlanAllocation: null,
      title: 'Aurora Mug 1',
      variant: variant(1),
    },
  ],
  localization: { country: { isoCode: 'CA' }, language: { isoCode: 'en' }, market: { handle: 'ca', id: 'gid://shopify/Market/1' } },
  order: null,
  phone: '+16135551111',
  shippingAddress: { address1: '1 Main St', city: 'Ottawa', country: 'Canada', firstName: 'Jane', lastName: 'Doe', zip: 'K1A 0B1' },
  shippingLine: null,
  smsMarketingPhone: null,
  subtotalPrice: { amount: 37, currencyCode: 'USD' },
  token: 'c1-9d2b7e4f0a8c',
  totalPrice: { amount: 42.5, currencyCode: 'USD' },
  totalTax: { amount: 5.5, currencyCode: 'USD' },
  transactions: [],
});

export const trimmedCheckout = () => ({ token: 'c1-9d2b7e4f0a8c' });

export const loggedInCustomer = () => ({
  id: '6001',
  email: 'sam.buyer@example.com',
  firstName: 'Sam',
  lastName: 'Buyer',
  phone: '+15555550100',
  ordersCount: 3,
});
