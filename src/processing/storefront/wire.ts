// Stage 2's edge for storefront batches: the pixel's wire format (extensions/email-pixel/README.md)
// validated with zod, once. A batch whose envelope fails is rejected whole; an event that fails
// its schema (unknown name, wrong shape) is dropped alone and counted. What passes comes out as
// the few kinds of storefront events the app uses, with a trusted time. Of a product the browser
// is believed for its ids only (and a cart line's quantity): titles, prices and URLs that older
// bundles still send are validated for size and then ignored, as Shopify's data replaces them.
import { z } from 'zod';
import { isEmailAddress, normalizeEmail } from '../../mapping/email';
import type { ProductRef } from '../../integrations/shopify/products';
import type { CartItem, ProductItem } from './items';

/** More events than the pixel ever puts in one request: the batch is refused whole. */
export const MAX_EVENTS_PER_BATCH = 50;

export const PIXEL_EVENT_NAMES = [
  'page_viewed',
  'product_viewed',
  'product_added_to_cart',
  'cart_viewed',
  'checkout_started',
  'checkout_contact_info_submitted',
  'search_submitted',
] as const;

/** Event times further from the arrival than this are not believed: the arrival time stands in. */
const MAX_SKEW_AHEAD_MS = 5 * 60_000;
const MAX_AGE_MS = 2 * 86_400_000;

// Identifiers go to indexed columns and source ids: printable ASCII, bounded.
const token = (max: number) => z.string().regex(new RegExp(`^[\\x21-\\x7e]{1,${max}}$`));
const text = (max: number) => z.string().max(max);
const money = z.object({
  amount: z.number().min(0).max(1e12).optional(),
  currencyCode: z
    .string()
    .regex(/^[A-Za-z]{3}$/)
    .optional(),
});
const product = z.object({
  id: token(64),
  title: text(512).optional(),
  url: text(2048).optional(),
  vendor: text(512).optional(),
  type: text(512).optional(),
});
const variantFields = {
  id: token(64).optional(),
  title: text(512).optional(),
  sku: text(512).optional(),
  price: money.optional(),
  image: z.object({ src: text(2048).optional() }).optional(),
};
const productVariant = z.object({ ...variantFields, product });
const checkout = z.object({
  token: text(255).optional(),
  currencyCode: text(8).optional(),
  totalPrice: money.optional(),
  lineItems: z
    .array(
      z.object({
        title: text(512).optional(),
        quantity: z.number().int().min(0).max(1e6).optional(),
        variant: z.object({ ...variantFields, product: product.partial().optional() }).optional(),
      }),
    )
    .max(250)
    .optional(),
});

/** One schema per event name: the trimmed shapes of the wire format. Unknown keys are dropped. */
const DATA = {
  page_viewed: z.object({}),
  product_viewed: z.object({ productVariant }),
  product_added_to_cart: z.object({
    cartLine: z.object({
      quantity: z.number().int().min(1).max(1e6),
      cost: z.object({ totalAmount: money.optional() }).optional(),
      merchandise: productVariant,
    }),
  }),
  cart_viewed: z.object({
    cart: z
      .object({
        id: text(255).optional(),
        totalQuantity: z.number().int().min(0).max(1e6).optional(),
        cost: z.object({ totalAmount: money.optional() }).optional(),
      })
      .optional(),
  }),
  checkout_started: z.object({ checkout: checkout.optional() }),
  checkout_contact_info_submitted: z.object({ checkout: checkout.optional() }),
  search_submitted: z.object({ searchResult: z.object({ query: text(512).optional() }).optional() }),
} satisfies Record<(typeof PIXEL_EVENT_NAMES)[number], z.ZodType>;

const envelope = z.object({
  v: z.literal(1),
  key: token(128),
  client_id: token(128),
  consent: z.object({ marketing: z.boolean().nullable(), analytics: z.boolean().nullable() }),
  customer: z.object({ email: z.string().max(320) }).nullable(),
  events: z.array(z.unknown()).max(MAX_EVENTS_PER_BATCH),
});

const head = z.object({
  id: token(128),
  name: z.enum(PIXEL_EVENT_NAMES),
  timestamp: z.string().max(64),
  url: text(4096).optional(),
  data: z.unknown(),
});

interface Base {
  /** The pixel's event id (Shopify's). */
  id: string;
  at: Date;
}
/** A storefront event as the browser gives it: products by reference only. */
export type WireEvent =
  | (Base & { kind: 'view'; ref: ProductRef })
  | (Base & { kind: 'add'; ref: ProductRef; quantity: number })
  | (Base & { kind: 'checkout' })
  | (Base & { kind: 'other' });

/**
 * The storefront events the app acts on, their products described by Shopify (`soldOut`: Shopify
 * said the variant could not be bought then; such a view counts for back in stock); the others
 * are read, validated and let go.
 */
export type StoreEvent =
  | (Base & { kind: 'view'; product: ProductItem; soldOut?: boolean })
  | (Base & { kind: 'add'; line: CartItem; soldOut?: boolean })
  | (Base & { kind: 'checkout' })
  | (Base & { kind: 'other' });

export type ReadBatch =
  | { ok: false; reason: string; events: number }
  | {
      ok: true;
      key: string;
      clientId: string;
      /** False only when the visitor's consent says marketing is not allowed. */
      marketing: boolean;
      /** The email the batch gives, trimmed and lower-cased, when it is one: a pending identity until Shopify vouches for it. */
      email: string | null;
      events: WireEvent[];
      /** Events dropped by their schema. */
      invalid: number;
    };

function eventTime(raw: string, receivedAt: Date): Date {
  const t = Date.parse(raw);
  const arrival = receivedAt.getTime();
  return Number.isNaN(t) || t > arrival + MAX_SKEW_AHEAD_MS || t < arrival - MAX_AGE_MS ? receivedAt : new Date(Math.min(t, arrival));
}

const refOf = (v: { id?: string; product: { id: string } }): ProductRef => ({ product_id: v.product.id, variant_id: v.id ?? null });

function readEvent(raw: unknown, receivedAt: Date): WireEvent | null {
  const h = head.safeParse(raw);
  if (!h.success) return null;
  const { id, name, timestamp } = h.data;
  const base = { id, at: eventTime(timestamp, receivedAt) };
  switch (name) {
    case 'product_viewed': {
      const d = DATA.product_viewed.safeParse(h.data.data);
      return d.success ? { ...base, kind: 'view', ref: refOf(d.data.productVariant) } : null;
    }
    case 'product_added_to_cart': {
      const d = DATA.product_added_to_cart.safeParse(h.data.data);
      if (!d.success) return null;
      return { ...base, kind: 'add', ref: refOf(d.data.cartLine.merchandise), quantity: d.data.cartLine.quantity };
    }
    case 'checkout_started':
    case 'checkout_contact_info_submitted':
      return DATA[name].safeParse(h.data.data).success ? { ...base, kind: 'checkout' } : null;
    default:
      return DATA[name].safeParse(h.data.data).success ? { ...base, kind: 'other' } : null;
  }
}

/** Reads a parsed batch; `receivedAt` bounds the event times the client claims. */
export function readBatch(payload: unknown, receivedAt: Date): ReadBatch {
  const events = Array.isArray((payload as { events?: unknown } | null)?.events) ? (payload as { events: unknown[] }).events.length : 0;
  const env = envelope.safeParse(payload);
  if (!env.success) {
    const issue = env.error.issues[0];
    return {
      ok: false,
      reason: `not a pixel batch: ${issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : 'invalid'}`.slice(0, 200),
      events,
    };
  }
  const b = env.data;
  const given = b.customer ? normalizeEmail(b.customer.email) : null;
  const read = b.events.map((e) => readEvent(e, receivedAt));
  const valid = read.filter((e): e is WireEvent => e !== null);
  return {
    ok: true,
    key: b.key,
    clientId: b.client_id,
    marketing: b.consent.marketing !== false,
    email: given !== null && isEmailAddress(given) ? given : null,
    events: valid,
    invalid: read.length - valid.length,
  };
}
