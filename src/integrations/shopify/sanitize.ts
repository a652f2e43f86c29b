// Shop-domain sanitising, used wherever a shop name enters the app (query strings, JWT `dest`,
// webhook headers). Same rule as the library's utils.sanitizeShop, plus normalisation so a shop
// is always stored under one key: lower case, no trailing slash.
const DOMAINS = ['myshopify\\.com', 'shopify\\.com', 'myshopify\\.io', 'shop\\.dev'].join('|');
const SHOP_RE = new RegExp(`^[a-z0-9][a-z0-9-_]*\\.(${DOMAINS})/*$`);
const ADMIN_RE = new RegExp(`^admin\\.(${DOMAINS})/store/([a-z0-9][a-z0-9-_]*)$`);

/** `x.myshopify.com` (or `admin.shopify.com/store/x`) → `x.myshopify.com`; anything else → null. */
export function sanitizeShop(input: unknown): string | null {
  if (typeof input !== 'string') return null;
  // Host names are case-insensitive: compare and store in lower case.
  let shop = input.trim().toLowerCase();
  if (!shop || shop.length > 255) return null;
  const admin = ADMIN_RE.exec(shop);
  if (admin) shop = `${admin[2]}.myshopify.com`;
  if (!SHOP_RE.test(shop)) return null;
  return shop.replace(/\/+$/, '');
}

/** The shop of a session token: the host of its `dest` claim (`https://{shop}`), sanitised. */
export function shopFromDest(dest: unknown): string | null {
  if (typeof dest !== 'string') return null;
  try {
    const url = new URL(dest);
    if (url.protocol !== 'https:' || url.port) return null;
    return sanitizeShop(url.hostname);
  } catch {
    return null;
  }
}
