// Access scopes: the optional scopes each feature needs, and what a granted scope string allows.
// Shopify counts a write scope as granting its read scope (write_products allows read_products).

/** The optional scopes (shopify.app.toml `optional_scopes`) each feature needs. */
export const FEATURE_SCOPES = {
  /** Product images and links in line items: the Admin API's products. */
  product_images: ['read_products'],
  /**
   * The storefront web pixel: activating it, the customer events it sends, and Shopify's data of
   * the products they name (an event's titles, prices and links are Shopify's, never the browser's).
   */
  storefront_pixel: ['write_pixels', 'read_customer_events', 'read_products'],
} as const satisfies Record<string, readonly string[]>;

export type Feature = keyof typeof FEATURE_SCOPES;

export const FEATURES = Object.keys(FEATURE_SCOPES) as Feature[];

/** Every optional scope, once: what `optional_scopes` in shopify.app.toml declares. */
export const OPTIONAL_SCOPES: readonly string[] = [...new Set(FEATURES.flatMap((f) => FEATURE_SCOPES[f]))];

/** `"read_orders, write_pixels"` or `['read_orders']` → `['read_orders', 'write_pixels']` (trimmed, once each). */
export function parseScopes(scope: string | readonly string[] | null | undefined): string[] {
  const parts = typeof scope === 'string' ? scope.split(',') : Array.isArray(scope) ? scope : [];
  const out: string[] = [];
  for (const p of parts) {
    const s = typeof p === 'string' ? p.trim() : '';
    if (s && !out.includes(s)) out.push(s);
  }
  return out;
}

function allows(granted: readonly string[], needed: string): boolean {
  if (granted.includes(needed)) return true;
  // write_x implies read_x (also for unauthenticated_ scopes, which follow the same rule)
  const m = /^(unauthenticated_)?read_(.+)$/.exec(needed);
  return Boolean(m && granted.includes(`${m[1] ?? ''}write_${m[2]}`));
}

/** The scopes of `needed` that `granted` does not allow. */
export function missingScopes(granted: string | readonly string[] | null | undefined, needed: readonly string[]): string[] {
  const have = parseScopes(granted);
  return needed.filter((s) => !allows(have, s));
}

export function hasScopes(granted: string | readonly string[] | null | undefined, needed: readonly string[]): boolean {
  return missingScopes(granted, needed).length === 0;
}
