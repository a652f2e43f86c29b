// The app proxy's signature, checked against Shopify's own documented example (secret `hush`),
// and the edges a forger or an odd request would try: repeated keys, encoded values, a missing or
// non-hex signature, a stale or future timestamp.
import { createHmac } from 'node:crypto';
import { MAX_SKEW_SECONDS, signAppProxy, signedMessage, queryParams, verifyAppProxy } from '../../../src/integrations/shopify/app-proxy';

// https://shopify.dev/docs/apps/build/online-store/app-proxies/authenticate-app-proxies
const SHOPIFY_EXAMPLE_QUERY =
  'extra=1&extra=2&shop=shop-name.myshopify.com&logged_in_customer_id=1&path_prefix=%2Fapps%2Fawesome_reviews&timestamp=1317327555&signature=4c68c8624d737112c91818c11017d24d334b524cb5c2b8ba08daa056f7395ddb';
const SHOPIFY_EXAMPLE_MESSAGE =
  'extra=1,2logged_in_customer_id=1path_prefix=/apps/awesome_reviewsshop=shop-name.myshopify.comtimestamp=1317327555';
const AT_EXAMPLE = 1317327555 * 1000;

/** A query as Shopify would forward it, signed with `secret`. */
function signed(params: Array<[string, string]>, secret = 'hush'): string {
  const q = new URLSearchParams(params);
  q.append('signature', signAppProxy(params, secret));
  return q.toString();
}

describe('app proxy signature', () => {
  it("accepts Shopify's documented example with the secret hush, and reads the shop and the customer from it", () => {
    expect(signedMessage(queryParams(SHOPIFY_EXAMPLE_QUERY))).toBe(SHOPIFY_EXAMPLE_MESSAGE);
    expect(verifyAppProxy(SHOPIFY_EXAMPLE_QUERY, 'hush', AT_EXAMPLE)).toEqual({
      ok: true,
      shop: 'shop-name.myshopify.com',
      loggedInCustomerId: '1',
      pathPrefix: '/apps/awesome_reviews',
      timestamp: 1317327555,
    });
    expect(verifyAppProxy(`?${SHOPIFY_EXAMPLE_QUERY}`, 'hush', AT_EXAMPLE).ok).toBe(true);
  });

  it('refuses the example with another secret, or with any parameter changed, added or removed', () => {
    expect(verifyAppProxy(SHOPIFY_EXAMPLE_QUERY, 'hush2', AT_EXAMPLE)).toEqual({ ok: false, reason: 'bad_signature' });
    const variants = [
      SHOPIFY_EXAMPLE_QUERY.replace('logged_in_customer_id=1', 'logged_in_customer_id=2'),
      SHOPIFY_EXAMPLE_QUERY.replace('extra=1&extra=2', 'extra=2&extra=1'),
      SHOPIFY_EXAMPLE_QUERY.replace('extra=1&', ''),
      `${SHOPIFY_EXAMPLE_QUERY}&more=1`,
      SHOPIFY_EXAMPLE_QUERY.replace('shop=shop-name', 'shop=other-shop'),
    ];
    for (const q of variants) expect([q, verifyAppProxy(q, 'hush', AT_EXAMPLE)]).toEqual([q, { ok: false, reason: 'bad_signature' }]);
  });

  it('joins the values of a repeated key with commas, in the order they came', () => {
    const params: Array<[string, string]> = [
      ['b', '2'],
      ['a', 'x'],
      ['a', 'y'],
    ];
    expect(signedMessage(params)).toBe('a=x,yb=2');
    // a single value holding the comma signs the same, as Shopify's scheme has it
    expect(
      signedMessage([
        ['a', 'x,y'],
        ['b', '2'],
      ]),
    ).toBe('a=x,yb=2');
  });

  it('signs the decoded values: percent-encoding and + for spaces do not change the signature', () => {
    const now = 1_800_000_000;
    const params: Array<[string, string]> = [
      ['shop', 'demo-store.myshopify.com'],
      ['logged_in_customer_id', ''],
      ['path_prefix', '/apps/email-connector'],
      ['note', 'a b&c=d/é'],
      ['timestamp', String(now)],
    ];
    const sig = signAppProxy(params, 'secret');
    expect(sig).toBe(
      createHmac('sha256', 'secret')
        .update(`logged_in_customer_id=note=a b&c=d/épath_prefix=/apps/email-connectorshop=demo-store.myshopify.comtimestamp=${now}`)
        .digest('hex'),
    );
    const encoded = `shop=demo-store.myshopify.com&logged_in_customer_id=&path_prefix=%2Fapps%2Femail-connector&note=a+b%26c%3Dd%2F%C3%A9&timestamp=${now}&signature=${sig}`;
    expect(verifyAppProxy(encoded, 'secret', now * 1000)).toMatchObject({ ok: true, loggedInCustomerId: null });
    expect(verifyAppProxy(encoded.replace('a+b', 'a%20b'), 'secret', now * 1000).ok).toBe(true);
  });

  it('refuses a missing, empty, repeated or non-hex signature, and takes a hex signature in capitals', () => {
    const without = SHOPIFY_EXAMPLE_QUERY.replace(/&signature=.*$/, '');
    expect(verifyAppProxy(without, 'hush', AT_EXAMPLE)).toEqual({ ok: false, reason: 'missing_signature' });
    expect(verifyAppProxy(`${without}&signature=`, 'hush', AT_EXAMPLE)).toEqual({ ok: false, reason: 'missing_signature' });
    expect(verifyAppProxy(`${SHOPIFY_EXAMPLE_QUERY}&signature=00`, 'hush', AT_EXAMPLE)).toEqual({ ok: false, reason: 'missing_signature' });
    expect(verifyAppProxy(`${without}&signature=${'z'.repeat(64)}`, 'hush', AT_EXAMPLE)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyAppProxy(`${without}&signature=4c68c862`, 'hush', AT_EXAMPLE)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(
      verifyAppProxy(
        `${without}&signature=${'4c68c8624d737112c91818c11017d24d334b524cb5c2b8ba08daa056f7395ddb'.toUpperCase()}`,
        'hush',
        AT_EXAMPLE,
      ).ok,
    ).toBe(true);
  });

  it(`refuses a timestamp more than ${MAX_SKEW_SECONDS} s from now, either way, or none`, () => {
    expect(verifyAppProxy(SHOPIFY_EXAMPLE_QUERY, 'hush', AT_EXAMPLE + MAX_SKEW_SECONDS * 1000).ok).toBe(true);
    expect(verifyAppProxy(SHOPIFY_EXAMPLE_QUERY, 'hush', AT_EXAMPLE - MAX_SKEW_SECONDS * 1000).ok).toBe(true);
    expect(verifyAppProxy(SHOPIFY_EXAMPLE_QUERY, 'hush', AT_EXAMPLE + (MAX_SKEW_SECONDS + 1) * 1000)).toEqual({
      ok: false,
      reason: 'stale',
    });
    expect(verifyAppProxy(SHOPIFY_EXAMPLE_QUERY, 'hush', AT_EXAMPLE - (MAX_SKEW_SECONDS + 1) * 1000)).toEqual({
      ok: false,
      reason: 'stale',
    });
    const noTimestamp = signed([['shop', 'demo-store.myshopify.com']]);
    expect(verifyAppProxy(noTimestamp, 'hush', AT_EXAMPLE)).toEqual({ ok: false, reason: 'stale' });
    const notANumber = signed([
      ['shop', 'demo-store.myshopify.com'],
      ['timestamp', '1317327555.5'],
    ]);
    expect(verifyAppProxy(notANumber, 'hush', AT_EXAMPLE)).toEqual({ ok: false, reason: 'stale' });
  });

  it('checks the signature before the timestamp: a forged stale request is a bad signature', () => {
    const forged = SHOPIFY_EXAMPLE_QUERY.replace('timestamp=1317327555', 'timestamp=1317327000');
    expect(verifyAppProxy(forged, 'hush', AT_EXAMPLE)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('refuses a signed request without a myshopify shop domain, and takes a guest as no customer', () => {
    const now = 1_800_000_000;
    const base: Array<[string, string]> = [['timestamp', String(now)]];
    expect(verifyAppProxy(signed(base), 'hush', now * 1000)).toEqual({ ok: false, reason: 'no_shop' });
    expect(verifyAppProxy(signed([...base, ['shop', 'evil.example.com']]), 'hush', now * 1000)).toEqual({ ok: false, reason: 'no_shop' });
    const guest = verifyAppProxy(
      signed([...base, ['shop', 'Demo-Store.myshopify.com'], ['logged_in_customer_id', '']]),
      'hush',
      now * 1000,
    );
    expect(guest).toEqual({ ok: true, shop: 'demo-store.myshopify.com', loggedInCustomerId: null, pathPrefix: null, timestamp: now });
  });
});
