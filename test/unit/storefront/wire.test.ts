// The pure edges of the storefront pipeline: the endpoint's head reader, URL cleaning, stage 2's
// batch reader, and the token buckets.
import { readHead } from '../../../src/http/pixel.route';
import { cleanUrl } from '../../../src/pixel/items';
import { TokenBuckets } from '../../../src/pixel/rate-limit';
import { MAX_EVENTS_PER_BATCH, readBatch } from '../../../src/pixel/wire';

const AT = new Date('2026-11-23T10:00:00.000Z');
const variant = { id: '45101', title: 'Default Title', price: { amount: 18.5, currencyCode: 'USD' }, image: { src: '//cdn.example/mug.png?v=3' }, product: { id: '8101', title: 'Aurora Mug', url: '/products/aurora-mug?ref=mail' } };
const view = (extra: Record<string, unknown> = {}) => ({ id: 'sh-1', name: 'product_viewed', timestamp: AT.toISOString(), url: 'https://shop.example/products/aurora-mug?email=a@b.c#top', data: { productVariant: variant }, ...extra });
const envelope = (events: unknown[], extra: Record<string, unknown> = {}) => ({ v: 1, key: 'pk_1', client_id: 'client-1', consent: { marketing: true, analytics: true }, customer: null, events, ...extra });

describe('readHead (stage 1, no JSON parsing)', () => {
  it('reads the key and client id the pixel writes first', () => {
    expect(readHead(Buffer.from(JSON.stringify(envelope([view()]))))).toEqual({ key: 'pk_1', clientId: 'client-1' });
    expect(readHead(Buffer.from('  {"v": 1, "key" : "k-_9", "client_id":"a3f1c6e2-7b4d"'))).toEqual({ key: 'k-_9', clientId: 'a3f1c6e2-7b4d' });
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
    ]) expect([raw, readHead(Buffer.from(raw))]).toEqual([raw, null]);
  });
});

describe('cleanUrl', () => {
  it('keeps http(s) URLs without query string, fragment or credentials; resolves relative ones', () => {
    expect(cleanUrl('https://user:pw@shop.example/a/b?email=x@y.z&utm=1#frag')).toBe('https://shop.example/a/b');
    expect(cleanUrl('/products/mug?x=1', 'http://127.0.0.1:4011/products/other?y=2')).toBe('http://127.0.0.1:4011/products/mug');
    expect(cleanUrl('//cdn.example/i.png?v=1')).toBe('https://cdn.example/i.png');
    // a port other than the scheme's own stays, the default one goes; a bare origin gets its path
    expect(cleanUrl('http://shop.example:8080/p?q=1')).toBe('http://shop.example:8080/p');
    expect(cleanUrl('https://shop.example:443/x#top')).toBe('https://shop.example/x');
    expect(cleanUrl('https://Shop.Example')).toBe('https://shop.example/');
    expect(cleanUrl('https://bücher.example/a b/../c?x')).toBe('https://xn--bcher-kva.example/c');
    for (const bad of ['javascript:alert(1)', 'data:text/html,x', '/relative/without/base', '', 'x'.repeat(3000)]) expect(cleanUrl(bad)).toBeNull();
  });
});

describe('readBatch (stage 2)', () => {
  it('turns a valid batch into storefront events with clean URLs', () => {
    const b = readBatch(envelope([view(), { ...view(), id: 'sh-2', name: 'page_viewed', data: {} }]), AT);
    expect(b).toEqual({
      ok: true, key: 'pk_1', clientId: 'client-1', marketing: true, email: null, invalid: 0,
      events: [
        {
          kind: 'view', id: 'sh-1', at: AT,
          product: {
            product_id: '8101', product_title: 'Aurora Mug', variant_id: '45101', variant_title: 'Default Title', sku: null, price: 18.5, currency: 'USD',
            product_url: 'https://shop.example/products/aurora-mug', image_url: 'https://cdn.example/mug.png',
          },
        },
        { kind: 'other', id: 'sh-2', at: AT },
      ],
    });
  });

  it('drops events of unknown names or wrong shapes alone, and counts them', () => {
    const b = readBatch(envelope([
      view(), { ...view(), name: 'order_completed' }, { ...view(), data: { productVariant: { title: 'no product id' } } },
      { ...view(), data: { productVariant: { ...variant, price: { amount: '18.50' } } } }, { name: 'product_viewed' }, 'not an event',
      { id: 'sh-9', name: 'product_added_to_cart', timestamp: AT.toISOString(), data: { cartLine: { quantity: 0, merchandise: variant } } },
    ]), AT);
    expect(b.ok && [b.events.length, b.invalid]).toEqual([1, 6]);
  });

  it('refuses a batch whose envelope is wrong, or that holds more than 50 events', () => {
    expect(readBatch(envelope(Array.from({ length: MAX_EVENTS_PER_BATCH + 1 }, () => view())), AT)).toMatchObject({ ok: false, events: 51, reason: expect.stringMatching(/^not a pixel batch: events/) });
    for (const bad of [null, [], 'x', envelope([], { v: 2 }), envelope([], { consent: null }), envelope([], { client_id: 'bad id with spaces' }), envelope([], { customer: { email: 42 } }), envelope({} as unknown[])]) {
      expect(readBatch(bad, AT).ok).toBe(false);
    }
  });

  it('reads consent (false means no marketing; null is Shopify’s pixel manager’s call) and the email', () => {
    expect(readBatch(envelope([], { consent: { marketing: false, analytics: true } }), AT)).toMatchObject({ marketing: false });
    expect(readBatch(envelope([], { consent: { marketing: null, analytics: null } }), AT)).toMatchObject({ marketing: true });
    expect(readBatch(envelope([], { customer: { email: '  Jane.Doe@Example.COM ' } }), AT)).toMatchObject({ email: 'jane.doe@example.com' });
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
