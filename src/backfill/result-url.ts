// Where a bulk operation's JSONL result may be fetched from. Shopify hands out a signed https URL
// on its storage (Google Cloud Storage, storage.googleapis.com; its own shopifycloud.com and
// shopifycdn.com hosts). In production nothing else is fetched: a URL elsewhere (an internal
// address, a cloud metadata service, a look-alike host) fails the import instead of making the
// app send a request there.

/** The hosts of Shopify's storage: the exact host, or any subdomain of a `.`-prefixed suffix. */
export const SHOPIFY_STORAGE_HOSTS = ['storage.googleapis.com', '.shopifycloud.com', '.shopifycdn.com'] as const;

/** True for an https URL on Shopify's storage, on the default port and without credentials. */
export function isShopifyStorageUrl(url: URL): boolean {
  if (url.protocol !== 'https:' || url.port !== '' || url.username !== '' || url.password !== '') return false;
  const host = url.hostname.toLowerCase();
  return SHOPIFY_STORAGE_HOSTS.some((h) => (h.startsWith('.') ? host.endsWith(h) && host.length > h.length : host === h));
}
