import { sanitizeShop, shopFromDest } from '../../../src/integrations/shopify/sanitize';
import { scrubSecrets } from '../../../src/integrations/shopify/api';

describe('sanitizeShop', () => {
  it.each([
    ['my-store.myshopify.com', 'my-store.myshopify.com'],
    ['My-Store.MyShopify.com', 'my-store.myshopify.com'],
    ['my-store.myshopify.com/', 'my-store.myshopify.com'],
    [' my-store.myshopify.com ', 'my-store.myshopify.com'],
    ['admin.shopify.com/store/my-store', 'my-store.myshopify.com'],
  ])('accepts %p as %p', (input, expected) => {
    expect(sanitizeShop(input)).toBe(expected);
  });

  it.each([
    '',
    'my-store',
    'localhost:3000',
    'https://my-store.myshopify.com',
    'my-store.myshopify.com.evil.com',
    'evil.com/my-store.myshopify.com',
    'a b.myshopify.com',
    '-x.myshopify.com',
    undefined,
    42,
    ['x.myshopify.com'],
  ])('refuses %p', (input) => {
    expect(sanitizeShop(input)).toBeNull();
  });

  it('takes the shop of a session token from its https dest, without a port', () => {
    expect(shopFromDest('https://my-store.myshopify.com')).toBe('my-store.myshopify.com');
    expect(shopFromDest('http://my-store.myshopify.com')).toBeNull();
    expect(shopFromDest('https://my-store.myshopify.com:8443')).toBeNull();
    expect(shopFromDest('https://evil.example.com')).toBeNull();
    expect(shopFromDest(undefined)).toBeNull();
  });
});

describe('scrubSecrets', () => {
  it('removes Shopify tokens, JWTs and OAuth secrets from library messages', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJhdWQiOiJ4In0.c2lnbmF0dXJl';
    const msg = `Failed to parse session token '${jwt}' shpat_abc123 shprt_def456 {"access_token":"tok1","client_secret":"sec"} ?code=xyz&state=s1 stateFromCookie: n0nce`;
    const out = scrubSecrets(msg);
    for (const s of [jwt, 'shpat_abc123', 'shprt_def456', 'tok1', '"sec"', 'xyz', 's1', 'n0nce']) expect(out).not.toContain(s);
    expect(out).toContain('Failed to parse session token');
  });
});
