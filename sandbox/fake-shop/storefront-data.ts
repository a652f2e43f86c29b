// The simulated shop's storefront data: a small catalog, carts and checkouts kept in memory,
// and the Shopify-shaped objects customer events carry (ProductVariant, CartLine, Cart,
// Checkout, Customer, as in @shopify/web-pixels-extension's types, with the fields Shopify
// sends, not only those our pixel keeps).
import { randomBytes } from 'node:crypto';

export interface CatalogVariant {
  id: string;
  /** "Default Title" for a product's only variant, as Shopify names it. */
  title: string;
  sku: string;
}

export interface CatalogProduct {
  handle: string;
  productId: string;
  /** The variant the product page opens on (its first); with `variants`, the one shown as this record. */
  variantId: string;
  /** The title of `variantId`; "Default Title" when absent. */
  variantTitle?: string;
  /** Every variant, when the product has more than one (same price); absent: `variantId` alone. */
  variants?: readonly CatalogVariant[];
  /** What the variants differ in ("Size"), shown by the picker. */
  optionName?: string;
  title: string;
  vendor: string;
  type: string;
  sku: string;
  price: number;
  color: string;
  description: string;
}

export const CATALOG: readonly CatalogProduct[] = [
  {
    handle: 'aurora-mug',
    productId: '8101',
    variantId: '45101',
    title: 'Aurora Mug',
    vendor: 'Demo Store',
    type: 'Kitchen',
    sku: 'MUG-AUR',
    price: 18,
    color: '#5b8def',
    description: 'A stoneware mug glazed in northern-lights blue.',
  },
  {
    handle: 'canvas-tote',
    productId: '8102',
    variantId: '45102',
    title: 'Canvas Tote',
    vendor: 'Demo Store',
    type: 'Bags',
    sku: 'TOTE-CNV',
    price: 24,
    color: '#d9a441',
    description: 'Heavy cotton canvas, long handles, one inside pocket.',
  },
  {
    handle: 'wool-beanie',
    productId: '8103',
    variantId: '45103',
    title: 'Wool Beanie',
    vendor: 'North Knits',
    type: 'Hats',
    sku: 'BEANIE-WL',
    price: 29.5,
    color: '#c0504d',
    description: 'Merino rib knit that keeps its shape.',
  },
  {
    handle: 'trail-bottle',
    productId: '8104',
    variantId: '45104',
    title: 'Trail Bottle',
    vendor: 'North Knits',
    type: 'Outdoor',
    sku: 'BTL-TRL',
    price: 32,
    color: '#4f9d69',
    description: 'Insulated steel bottle, 750 ml, cold for a day.',
  },
  {
    // three sizes, the small one sold out (stock.ts): the notify-me block's product
    handle: 'merino-socks',
    productId: '8105',
    variantId: '45105',
    variantTitle: 'Small',
    variants: [
      { id: '45105', title: 'Small', sku: 'SOCK-MER-S' },
      { id: '45106', title: 'Medium', sku: 'SOCK-MER-M' },
      { id: '45107', title: 'Large', sku: 'SOCK-MER-L' },
    ],
    optionName: 'Size',
    title: 'Merino Socks',
    vendor: 'North Knits',
    type: 'Socks',
    sku: 'SOCK-MER-S',
    price: 16,
    color: '#7a5c99',
    description: 'Cushioned merino hiking socks in three sizes.',
  },
];

export const CURRENCY = 'USD';
export const SANDBOX_CUSTOMER = {
  id: '7001',
  email: 'jane.sandbox@example.com',
  firstName: 'Jane',
  lastName: 'Sandbox',
  phone: null,
  ordersCount: 2,
};

const money = (amount: number) => ({ amount: Math.round(amount * 100) / 100, currencyCode: CURRENCY });
export const formatPrice = (amount: number) => `$${amount.toFixed(2)}`;
export const imagePath = (p: CatalogProduct) => `/_sandbox/storefront/images/${p.handle}.svg`;
export const productByHandle = (handle: string) => CATALOG.find((p) => p.handle === handle);

/** The product's variants: its `variants`, or its one variant. */
export const variantsOf = (p: CatalogProduct): readonly CatalogVariant[] =>
  p.variants ?? [{ id: p.variantId, title: p.variantTitle ?? 'Default Title', sku: p.sku }];

/** The product of a variant, as a record of that variant (its id, title and SKU in the product's fields). */
export function productByVariant(variantId: string): CatalogProduct | undefined {
  for (const p of CATALOG) {
    const v = variantsOf(p).find((x) => x.id === variantId);
    if (v) return v.id === p.variantId ? p : { ...p, variantId: v.id, variantTitle: v.title, sku: v.sku };
  }
  return undefined;
}

/** A ProductVariant as customer events carry it (image.src absolute, product.url relative, as Shopify's). */
export function productVariant(p: CatalogProduct, origin: string) {
  return {
    id: p.variantId,
    image: { src: `${origin}${imagePath(p)}` },
    price: money(p.price),
    product: { id: p.productId, title: p.title, type: p.type, untranslatedTitle: p.title, url: `/products/${p.handle}`, vendor: p.vendor },
    sku: p.sku,
    title: p.variantTitle ?? 'Default Title',
    untranslatedTitle: p.variantTitle ?? 'Default Title',
  };
}

export interface CartRecord {
  token: string;
  /** variant id → quantity, in insertion order */
  lines: Map<string, number>;
  checkout?: { id: number; token: string; email: string | null; createdAt: string };
}

export function cartLine(p: CatalogProduct, quantity: number, origin: string) {
  return { cost: { totalAmount: money(p.price * quantity) }, merchandise: productVariant(p, origin), quantity };
}

function cartLines(cart: CartRecord): Array<{ product: CatalogProduct; quantity: number }> {
  const out: Array<{ product: CatalogProduct; quantity: number }> = [];
  for (const [variantId, quantity] of cart.lines) {
    const product = productByVariant(variantId);
    if (product && quantity > 0) out.push({ product, quantity });
  }
  return out;
}

export const cartTotal = (cart: CartRecord) => cartLines(cart).reduce((sum, l) => sum + l.product.price * l.quantity, 0);
export const cartQuantity = (cart: CartRecord) => cartLines(cart).reduce((sum, l) => sum + l.quantity, 0);
export const linesOf = cartLines;

/** A Cart as customer events and init.data.cart carry it; null when empty, as Shopify's cart_viewed. */
export function cartObject(cart: CartRecord | undefined, origin: string) {
  if (!cart || cartQuantity(cart) === 0) return null;
  return {
    attributes: [],
    cost: { totalAmount: money(cartTotal(cart)) },
    id: cart.token,
    lines: cartLines(cart).map((l) => cartLine(l.product, l.quantity, origin)),
    totalQuantity: cartQuantity(cart),
  };
}

/** A Checkout as checkout events carry it, email included (the pixel decides what to keep). */
export function checkoutObject(cart: CartRecord, origin: string) {
  const checkout = cart.checkout ?? { token: '', email: null };
  const total = cartTotal(cart);
  return {
    attributes: [],
    billingAddress: null,
    buyerAcceptsEmailMarketing: false,
    buyerAcceptsSmsMarketing: false,
    currencyCode: CURRENCY,
    delivery: null,
    discountApplications: [],
    discountsAmount: money(0),
    email: checkout.email,
    lineItems: cartLines(cart).map((l, i) => ({
      discountAllocations: [],
      finalLinePrice: money(l.product.price * l.quantity),
      id: `${checkout.token}-${i + 1}`,
      properties: [],
      quantity: l.quantity,
      sellingPlanAllocation: null,
      title: l.product.title,
      variant: productVariant(l.product, origin),
    })),
    localization: { country: { isoCode: 'US' }, language: { isoCode: 'en' }, market: { handle: 'us', id: 'gid://shopify/Market/1' } },
    order: null,
    phone: null,
    shippingAddress: null,
    shippingLine: null,
    smsMarketingPhone: null,
    subtotalPrice: money(total),
    token: checkout.token,
    totalPrice: money(total),
    totalTax: money(0),
    transactions: [],
  };
}

/** The checkouts/create or checkouts/update webhook payload of the cart's checkout, as Shopify sends it. */
export function checkoutWebhook(cart: CartRecord, origin: string, customer: typeof SANDBOX_CUSTOMER | null) {
  const checkout = cart.checkout!;
  const total = cartTotal(cart).toFixed(2);
  return {
    id: checkout.id,
    token: checkout.token,
    cart_token: cart.token,
    email: checkout.email ?? customer?.email ?? null,
    created_at: checkout.createdAt,
    updated_at: new Date().toISOString(),
    completed_at: null,
    currency: CURRENCY,
    presentment_currency: CURRENCY,
    total_price: total,
    subtotal_price: total,
    abandoned_checkout_url: `${origin}/checkout?recover=${checkout.token}`,
    line_items: cartLines(cart).map((l) => ({
      product_id: Number(l.product.productId),
      variant_id: Number(l.product.variantId),
      title: l.product.title,
      variant_title: l.product.variantTitle ?? null,
      sku: l.product.sku,
      quantity: l.quantity,
      price: l.product.price.toFixed(2),
    })),
    customer: customer
      ? { id: Number(customer.id), email: customer.email, first_name: customer.firstName, last_name: customer.lastName }
      : null,
  };
}

let nextCheckoutId = 30_000_000;

/** Carts by token (the `cart` cookie), as the storefront's session would keep them. */
export class CartStore {
  private readonly carts = new Map<string, CartRecord>();

  get(token: string | undefined): CartRecord | undefined {
    return token ? this.carts.get(token) : undefined;
  }

  getOrCreate(token: string | undefined): CartRecord {
    const found = this.get(token);
    if (found) return found;
    const cart: CartRecord = { token: `c1-${randomBytes(12).toString('hex')}`, lines: new Map() };
    this.carts.set(cart.token, cart);
    return cart;
  }

  /** The cart's checkout, created on first visit to the checkout. */
  checkout(cart: CartRecord): NonNullable<CartRecord['checkout']> {
    cart.checkout ??= { id: nextCheckoutId++, token: randomBytes(16).toString('hex'), email: null, createdAt: new Date().toISOString() };
    return cart.checkout;
  }
}
