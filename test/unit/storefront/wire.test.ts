// The pure edges of the storefront pipeline: the endpoint's head reader and client address,
// stage 2's batch reader, the emails signed webhooks vouch for, email keys, and the token buckets.
import { readHead } from '../../../src/http/pixel.route';
import { clientAddress, ipKey } from '../../../src/intake/client-ip';
import { createEmailKeys } from '../../../src/processing/storefront/email-keys';
import { TokenBuckets } from '../../../src/lib/rate-limit';
import { vouchedEmails, vouchSourceOf } from '../../../src/processing/storefront/vouch';
import { MAX_EVENTS_PER_BATCH, readBatch } from '../../../src/processing/storefront/wire';

const AT = new Date('2026-11-23T10:00:00.000Z');
const variant = {
  id: '45101',
  title: 'Default Title',
  price: { amount: 18.5, currencyCode: 'USD' },
  image: { src: '//cdn.example/mug.png?v=3' },
  product: { id: '8101', title: 'Aurora Mug', url: '/products/aurora-mug?ref=mail' },
};
const view = (extra: Record<string, unknown> = {}) => ({
  id: 'sh-1',
  name: 'product_viewed',
  timestamp: AT.toISOString(),
  url: 'https://shop.example/products/aurora-mug?email=a@b.c#top',
  data: { productVariant: variant },
  ...extra,
});
const envelope = (events: unknown[], extra: Record<string, unknown> = {}) => ({
  v: 1,
  key: 'pk_1',
  client_id: 'client-1',
  consent: { marketing: true, analytics: true },
  customer: null,
  events,
  ...extra,
});

describe('readHead (stage 1, no JSON parsing)', () => {
  it('reads the key and client id the pixel writes first', () => {
    expect(readHead(Buffer.from(JSON.stringify(envelope([view()]))))).toEqual({ key: 'pk_1', clientId: 'client-1' });
    expect(readHead(Buffer.from('  {"v": 1, "key" : "k-_9", "client_id":"a3f1c6e2-7b4d"'))).toEqual({
      key: 'k-_9',
      clientId: 'a3f1c6e2-7b4d',
    });
  });

  it('reads nothing from another order, escapes, quotes, or beyond its first 512 bytes', () => {
    for (const raw of [
      '{"key":"k","v":1,"client_id":"c"}',
      '{"v":1,"key":"\\u006b","client_id":"c"}',
      '{"v":1,"key":"k","client_id":"a\\"b"}',
      '{"v":1,"key":"k","client_id":""}',
      `{"v":1,"key":"${'k'.repeat(129)}","client_id":"c"}`,
      `${' '.repeat(600)}{"v":1,"key":"k","client_id":"c"}`,
      '{"v":2,"key":"k","client_id":"c"}',
    ])
      expect([raw, readHead(Buffer.from(raw))]).toEqual([raw, null]);
  });
});

describe('the client address of the per-IP limit', () => {
  it('is the socket peer unless proxies are trusted, then the address the outermost trusted one saw', () => {
    expect(clientAddress('10.0.0.5', '1.2.3.4', 0)).toBe('10.0.0.5');
    expect(clientAddress('10.0.0.5', undefined, 1)).toBe('10.0.0.5');
    // one load balancer: it appended the client; anything the client wrote to the left is ignored
    expect(clientAddress('10.0.0.5', '1.2.3.4', 1)).toBe('1.2.3.4');
    expect(clientAddress('10.0.0.5', '6.6.6.6, 1.2.3.4', 1)).toBe('1.2.3.4');
    // two hops (CDN, then load balancer)
    expect(clientAddress('10.0.0.5', '6.6.6.6, 1.2.3.4, 172.16.0.9', 2)).toBe('1.2.3.4');
    expect(clientAddress('10.0.0.5', ['6.6.6.6', '1.2.3.4'], 1)).toBe('1.2.3.4');
    // fewer entries than hops: the leftmost there is
    expect(clientAddress('10.0.0.5', '1.2.3.4', 3)).toBe('1.2.3.4');
  });

  it('keys IPv4 (and IPv4-mapped) addresses as they are, IPv6 ones by their /64', () => {
    expect(ipKey('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(ipKey('203.0.113.9')).toBe('203.0.113.9');
    expect(ipKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(ipKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(ipKey('2001:DB8:0001:0002::9')).toBe('2001:db8:1:2::/64');
    expect(ipKey('::1')).toBe('0:0:0:0::/64');
    expect(ipKey('not an address')).toBe('not an address');
  });
});

describe('emails vouched for by signed webhooks', () => {
  it('takes customers’, orders’ and checkouts’ valid emails, normalised; nothing of other topics', () => {
    expect(vouchedEmails('customers/create', { email: ' Jane@Example.COM ' })).toEqual(['jane@example.com']);
    // an email consent change names the customer's address as email_address
    expect(vouchedEmails('customers_email_marketing_consent/update', { customer_id: 1, email_address: 'Ann@Example.com' })).toEqual([
      'ann@example.com',
    ]);
    expect(
      vouchedEmails('orders/paid', { email: 'a@example.com', contact_email: 'b@example.com', customer: { email: 'A@example.com' } }).sort(),
    ).toEqual(['a@example.com', 'b@example.com']);
    expect(vouchedEmails('checkouts/update', { email: null, customer: { email: 'c@example.com' } })).toEqual(['c@example.com']);
    expect(vouchedEmails('checkouts/create', { email: 'not-an-email' })).toEqual([]);
    expect(vouchedEmails('refunds/create', { email: 'a@example.com' })).toEqual([]);
    expect(vouchedEmails('customers/redact', { customer: { email: 'a@example.com' } })).toEqual([]);
    expect([
      vouchSourceOf('orders/create'),
      vouchSourceOf('customers/update'),
      vouchSourceOf('checkouts/create'),
      vouchSourceOf('fulfillments/create'),
    ]).toEqual(['order', 'customer', 'checkout', null]);
  });
});

describe('email keys', () => {
  const key = Buffer.alloc(32, 1);
  const previous = Buffer.alloc(32, 2);
  it('hold no address, differ per shop, match however the email is written, and find keys of older secrets', () => {
    const keys = createEmailKeys({ key, previousKeys: [previous] });
    const k = keys.of('shop-1', 'Jane@Example.com ');
    expect(k).toBe(keys.of('shop-1', 'jane@example.com'));
    expect(k).not.toContain('jane');
    expect(k).not.toBe(keys.of('shop-2', 'jane@example.com'));
    expect(k).not.toBe(createEmailKeys({ key: previous }).of('shop-1', 'jane@example.com'));
    expect(keys.all('shop-1', 'jane@example.com')).toEqual([k, createEmailKeys({ key: previous }).of('shop-1', 'jane@example.com')]);
  });
});

describe('readBatch (stage 2)', () => {
  it('turns a valid batch into storefront events, products by reference only (what an older bundle says of them is ignored)', () => {
    const add = {
      id: 'sh-3',
      name: 'product_added_to_cart',
      timestamp: AT.toISOString(),
      data: { cartLine: { quantity: 2, cost: { totalAmount: { amount: 0.01, currencyCode: 'USD' } }, merchandise: variant } },
    };
    const b = readBatch(
      envelope([
        view(),
        { ...view(), id: 'sh-2', name: 'page_viewed', data: {} },
        add,
        { ...view(), id: 'sh-4', data: { productVariant: { product: { id: '8102' } } } },
      ]),
      AT,
    );
    expect(b).toEqual({
      ok: true,
      key: 'pk_1',
      clientId: 'client-1',
      marketing: true,
      email: null,
      invalid: 0,
      events: [
        { kind: 'view', id: 'sh-1', at: AT, ref: { product_id: '8101', variant_id: '45101' } },
        { kind: 'other', id: 'sh-2', at: AT },
        { kind: 'add', id: 'sh-3', at: AT, ref: { product_id: '8101', variant_id: '45101' }, quantity: 2 },
        { kind: 'view', id: 'sh-4', at: AT, ref: { product_id: '8102', variant_id: null } },
      ],
    });
    expect(JSON.stringify(b)).not.toMatch(/Aurora|18\.5|cdn\.example|0\.01/);
  });

  it('drops events of unknown names or wrong shapes alone, and counts them', () => {
    const b = readBatch(
      envelope([
        view(),
        { ...view(), name: 'order_completed' },
        { ...view(), data: { productVariant: { title: 'no product id' } } },
        { ...view(), data: { productVariant: { ...variant, price: { amount: '18.50' } } } },
        { name: 'product_viewed' },
        'not an event',
        {
          id: 'sh-9',
          name: 'product_added_to_cart',
          timestamp: AT.toISOString(),
          data: { cartLine: { quantity: 0, merchandise: variant } },
        },
      ]),
      AT,
    );
    expect(b.ok && [b.events.length, b.invalid]).toEqual([1, 6]);
  });

  it('refuses a batch whose envelope is wrong, or that holds more than 50 events', () => {
    expect(readBatch(envelope(Array.from({ length: MAX_EVENTS_PER_BATCH + 1 }, () => view())), AT)).toMatchObject({
      ok: false,
      events: 51,
      reason: expect.stringMatching(/^not a pixel batch: events/),
    });
    for (const bad of [
      null,
      [],
      'x',
      envelope([], { v: 2 }),
      envelope([], { consent: null }),
      envelope([], { client_id: 'bad id with spaces' }),
      envelope([], { customer: { email: 42 } }),
      envelope({} as unknown[]),
    ]) {
      expect(readBatch(bad, AT).ok).toBe(false);
    }
  });

  it('reads consent (false means no marketing; null is Shopify’s pixel manager’s call) and the email', () => {
    expect(readBatch(envelope([], { consent: { marketing: false, analytics: true } }), AT)).toMatchObject({ marketing: false });
    expect(readBatch(envelope([], { consent: { marketing: null, analytics: null } }), AT)).toMatchObject({ marketing: true });
    expect(readBatch(envelope([], { customer: { email: '  Jane.Doe@Example.COM ' } }), AT)).toMatchObject({
      email: 'jane.doe@example.com',
    });
    expect(readBatch(envelope([], { customer: { email: '+1 555 0100' } }), AT)).toMatchObject({ email: null });
  });

  it('believes an event time only near the arrival: not in the future, not days old', () => {
    const at = (timestamp: unknown) => {
      const b = readBatch(envelope([view({ timestamp })]), AT);
      return b.ok ? b.events[0]?.at.toISOString() : 'refused';
    };
    expect(at('2026-11-23T09:59:00.000Z')).toBe('2026-11-23T09:59:00.000Z');
    expect(at('2026-11-23T10:03:00.000Z')).toBe(AT.toISOString());
    expect(at('2030-01-01T00:00:00.000Z')).toBe(AT.toISOString());
    expect(at('2020-01-01T00:00:00.000Z')).toBe(AT.toISOString());
    expect(at('yesterday')).toBe(AT.toISOString());
  });
});

describe('TokenBuckets', () => {
  it('lets a burst through, then the rate', () => {
    let now = 0;
    const b = new TokenBuckets({ rate: 2, burst: 5, nowMs: () => now });
    expect(Array.from({ length: 8 }, () => b.take('a'))).toEqual([true, true, true, true, true, false, false, false]);
    expect(b.take('b')).toBe(true);
    now += 1000;
    expect(Array.from({ length: 3 }, () => b.take('a'))).toEqual([true, true, false]);
  });

  it('takes several tokens at once, all or none (a cost, not a count)', () => {
    let now = 0;
    const b = new TokenBuckets({ rate: 10, burst: 100, nowMs: () => now });
    expect([b.take('a', 60), b.take('a', 60), b.take('a', 40), b.take('a', 1)]).toEqual([true, false, true, false]);
    expect([b.take('b', 101), b.take('b', 100)]).toEqual([false, true]);
    now += 3_000; // 30 tokens back
    expect([b.take('a', 31), b.take('a', 30)]).toEqual([false, true]);
  });

  it('keeps an empty bucket empty across the turn of its generation, and forgets a key once its bucket is full', () => {
    // rate 1/s, burst 2: a generation lasts 2 s, the time an empty bucket takes to fill
    let now = 0;
    const b = new TokenBuckets({ rate: 1, burst: 2, nowMs: () => now });
    now = 1_900;
    expect([b.take('a'), b.take('a'), b.take('a')]).toEqual([true, true, false]);
    now = 2_100; // the generation turned at 2 s; 'a' gets its next token at 2.9 s
    expect(b.take('a')).toBe(false);
    now = 2_900;
    expect([b.take('a'), b.take('a')]).toEqual([true, false]);
    now = 20_000; // two generations later every bucket is full: both are dropped
    expect([b.take('a'), b.take('a'), b.take('a')]).toEqual([true, true, false]);
    expect(b.size).toBe(1);
  });

  it('stays within its key limit under a flood of distinct keys', () => {
    let now = 0;
    const b = new TokenBuckets({ rate: 1, burst: 2, maxKeys: 100, nowMs: () => now });
    for (let i = 0; i < 10_000; i++) {
      now += 1;
      b.take(`k${i}`);
    }
    expect(b.size).toBeLessThanOrEqual(100);
  });
});
