// When batches leave: after a short timer, at 10 events, on a navigation (page_viewed), and at
// once for events that precede leaving the page; how they leave: a text/plain beacon, else a
// keepalive fetch; never more than 50 events or ~60 KB in one request.
import { SANDBOX_ENDPOINT } from '../../../extensions/email-pixel/src/endpoint';
import { MAX_BODY_BYTES } from '../../../extensions/email-pixel/src/pixel';

// the documented limits, as literals: changing them in the source must fail here
const FLUSH_DELAY_MS = 1000;
const FLUSH_SIZE = 10;
const MAX_EVENTS_PER_REQUEST = 50;
import { loadPixel, settle } from './harness';
import { cartLine, checkout, event, resetSeq, variant } from './fixtures';

const names = (pixel: ReturnType<typeof loadPixel>) => pixel.batches().map((b) => b.events.map((e) => e.name));
const viewed = (n = 1) => event('product_viewed', { productVariant: variant(n) });

describe('pixel batching', () => {
  beforeEach(() => {
    jest.useFakeTimers();
    resetSeq();
  });
  afterEach(() => jest.useRealTimers());

  it('holds events until the timer, then sends them in one request, in order', () => {
    const pixel = loadPixel();
    pixel.emit(viewed(1));
    jest.advanceTimersByTime(400);
    pixel.emit(viewed(2));
    pixel.emit(event('search_submitted', { searchResult: { query: 'tote' } }));
    jest.advanceTimersByTime(FLUSH_DELAY_MS - 401);
    expect(pixel.beacons).toHaveLength(0);
    // the timer runs from the batch's first event: later events do not push it back
    jest.advanceTimersByTime(1);
    expect(names(pixel)).toEqual([['product_viewed', 'product_viewed', 'search_submitted']]);
    expect(pixel.batches()[0]!.events.map((e) => e.id)).toEqual(['sh-00001-test', 'sh-00002-test', 'sh-00003-test']);
  });

  it('sends nothing when nothing happened, and starts a new timer for the next batch', () => {
    const pixel = loadPixel();
    jest.advanceTimersByTime(10 * FLUSH_DELAY_MS);
    expect(pixel.beacons).toHaveLength(0);
    pixel.emit(viewed(1));
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    pixel.emit(viewed(2));
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    expect(names(pixel)).toEqual([['product_viewed'], ['product_viewed']]);
  });

  it(`sends at once when the batch reaches ${FLUSH_SIZE} events`, () => {
    const pixel = loadPixel();
    for (let i = 0; i < FLUSH_SIZE - 1; i++) pixel.emit(viewed(i));
    expect(pixel.beacons).toHaveLength(0);
    pixel.emit(viewed(99));
    expect(pixel.batches().map((b) => b.events.length)).toEqual([FLUSH_SIZE]);
    pixel.emit(viewed(100));
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    expect(pixel.batches().map((b) => b.events.length)).toEqual([FLUSH_SIZE, 1]);
  });

  it('on page_viewed (a navigation), sends what the previous page queued and starts a new batch with it', () => {
    const pixel = loadPixel();
    pixel.emit(event('page_viewed', {}, { path: '/products/a' }));
    pixel.emit(viewed(1));
    expect(pixel.beacons).toHaveLength(0);
    pixel.emit(event('page_viewed', {}, { path: '/products/b' }));
    expect(names(pixel)).toEqual([['page_viewed', 'product_viewed']]);
    pixel.emit(viewed(2));
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    expect(names(pixel)).toEqual([
      ['page_viewed', 'product_viewed'],
      ['page_viewed', 'product_viewed'],
    ]);
    expect(pixel.batches()[1]!.events[0]!.url).toBe('https://demo-store.myshopify.com/products/b');
  });

  it('sends at once, with what is queued, on product_added_to_cart and checkout_started', () => {
    const pixel = loadPixel();
    pixel.emit(event('page_viewed'));
    pixel.emit(viewed(1));
    pixel.emit(event('product_added_to_cart', { cartLine: cartLine(1, 1) }));
    expect(names(pixel)).toEqual([['page_viewed', 'product_viewed', 'product_added_to_cart']]);
    pixel.emit(event('checkout_started', { checkout: checkout() }));
    expect(names(pixel)).toEqual([['page_viewed', 'product_viewed', 'product_added_to_cart'], ['checkout_started']]);
    jest.advanceTimersByTime(10 * FLUSH_DELAY_MS);
    expect(pixel.beacons).toHaveLength(2); // the timer of the first batch was cancelled
  });

  it(`never puts more than ${MAX_EVENTS_PER_REQUEST} events in one request`, () => {
    const pixel = loadPixel();
    for (let i = 0; i < 123; i++) pixel.emit(viewed(i));
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    const sizes = pixel.batches().map((b) => b.events.length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(123);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_EVENTS_PER_REQUEST);
  });

  it.each([
    ['ASCII', 'x'],
    ['multi-byte UTF-8', 'ü'],
  ])(`splits a batch whose body would exceed ${MAX_BODY_BYTES} bytes (the beacon limit), %s text`, (_label, char) => {
    const pixel = loadPixel();
    const long = (n: number) => event('search_submitted', { searchResult: { query: `q${n} ${char.repeat(20_000)}` } });
    for (let i = 0; i < 5; i++) pixel.emit(long(i));
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    expect(pixel.beacons.length).toBeGreaterThan(1);
    for (const b of pixel.beacons) expect(Buffer.byteLength(b.body)).toBeLessThanOrEqual(MAX_BODY_BYTES);
    expect(
      pixel.batches().flatMap((b) => b.events.map((e) => (e.data as { searchResult: { query: string } }).searchResult.query.slice(0, 2))),
    ).toEqual(['q0', 'q1', 'q2', 'q3', 'q4']);
  });

  it('posts to the endpoint with browser.sendBeacon and does not fetch when the beacon is queued', async () => {
    const pixel = loadPixel();
    pixel.emit(event('checkout_started', { checkout: checkout() }));
    await settle();
    expect(pixel.beacons.map((b) => b.url)).toEqual([SANDBOX_ENDPOINT]);
    expect(pixel.fetches).toHaveLength(0);
  });

  it.each([false, 'reject'] as const)(
    'falls back to a keepalive text/plain fetch, without preflight, when the beacon answers %s',
    async (answer) => {
      const pixel = loadPixel({ beacon: answer });
      pixel.emit(event('checkout_started', { checkout: checkout() }));
      await settle();
      expect(pixel.fetches).toHaveLength(1);
      const [{ url, init }] = pixel.fetches as [{ url: string; init: RequestInit }];
      expect(url).toBe(SANDBOX_ENDPOINT);
      expect(init).toMatchObject({
        method: 'POST',
        keepalive: true,
        mode: 'no-cors',
        credentials: 'omit',
        headers: { 'content-type': 'text/plain;charset=UTF-8' },
      });
      expect(init.body).toBe(pixel.beacons[0]!.body);
    },
  );

  it('drops a batch quietly when the fallback fetch fails too (the failure is handled, not left unhandled)', async () => {
    const pixel = loadPixel({ beacon: false });
    let handled = false;
    globalThis.fetch = (() => ({
      then(_ok: unknown, onFailure?: (e: unknown) => unknown) {
        handled = typeof onFailure === 'function';
        return Promise.resolve(onFailure?.(new TypeError('network down')));
      },
    })) as unknown as typeof fetch;
    pixel.emit(event('checkout_started', { checkout: checkout() }));
    await settle();
    expect(handled).toBe(true);
  });
});
