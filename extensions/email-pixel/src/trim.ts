// Data minimisation: an event's `data` is cut down to the fields the app uses, keeping Shopify's
// names and nesting. The shapes below are the whole list; anything else (titles, prices, images,
// addresses, phone, the checkout's email, discounts, transactions, ...) never leaves the browser.
// Of a product only its ids travel: the app takes titles, prices and links from Shopify itself.

/** 1: copy a string, number or boolean; an object: recurse; [shape]: an array of that shape. */
type Shape = 1 | { readonly [key: string]: Shape } | readonly [Shape];

const PRODUCT_VARIANT = { id: 1, product: { id: 1 } } as const;

/** The fields kept under each key of an event's data. Keys not listed are dropped. */
export const DATA_SHAPE = {
  productVariant: PRODUCT_VARIANT,
  cartLine: { quantity: 1, merchandise: PRODUCT_VARIANT },
  cart: { id: 1, totalQuantity: 1 },
  // no email here: an email is sent only as the batch's `customer`, and only from the contact step
  checkout: { token: 1 },
  searchResult: { query: 1 },
} as const;

const isList = (shape: Shape): shape is readonly [Shape] => Array.isArray(shape);

type Json = string | number | boolean | Json[] | { [key: string]: Json };

/** `value` cut to `shape`; undefined when nothing is left (null, absent and empty are omitted). */
export function trim(value: unknown, shape: Shape): Json | undefined {
  if (shape === 1) {
    return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && isFinite(value)) ? value : undefined;
  }
  if (isList(shape)) {
    if (!Array.isArray(value)) return undefined;
    const out: Json[] = [];
    for (const item of value) {
      const t = trim(item, shape[0]);
      if (t !== undefined) out.push(t);
    }
    return out;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const source = value as Record<string, unknown>;
  const out: { [key: string]: Json } = {};
  let kept = false;
  for (const key of Object.keys(shape)) {
    const t = trim(source[key], shape[key]!);
    if (t !== undefined) {
      out[key] = t;
      kept = true;
    }
  }
  return kept ? out : undefined;
}

/** The event's data as sent: `{}` when none of it is kept (page_viewed has none by design). */
export function trimEventData(data: unknown): { [key: string]: Json } {
  return (trim(data, DATA_SHAPE) as { [key: string]: Json } | undefined) ?? {};
}
