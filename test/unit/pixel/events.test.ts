// Each subscribed event becomes exactly the wire payload the app's POST /pixel/events expects.
import { SANDBOX_ENDPOINT } from '../../../extensions/email-pixel/src/endpoint';
import { FLUSH_DELAY_MS } from '../../../extensions/email-pixel/src/pixel';
import { loadPixel, PIXEL_KEY } from './harness';
import {
  cart,
  cartLine,
  checkout,
  CHECKOUT_EMAIL,
  CLIENT_ID,
  event,
  resetSeq,
  SHOP,
  trimmedCheckout,
  trimmedVariant,
  variant,
} from './fixtures';

const envelope = { v: 1, key: PIXEL_KEY, client_id: CLIENT_ID, consent: { marketing: true, analytics: true } };

describe('pixel events on the wire', () => {
  beforeEach(() => {
    jest.useFakeTimers();
    resetSeq();
  });
  afterEach(() => jest.useRealTimers());

  it('subscribes to exactly the seven standard events it sends, through register()', () => {
    const pixel = loadPixel();
    expect(pixel.extensionPoint).toBe('WebPixel::Render');
    expect(pixel.subscribed.sort()).toEqual([
      'cart_viewed',
      'checkout_contact_info_submitted',
      'checkout_started',
      'page_viewed',
      'product_added_to_cart',
      'product_viewed',
      'search_submitted',
    ]);
  });

  it('sends product_viewed with the variant trimmed to its id and its product’s: no title, price, image or link', () => {
    const pixel = loadPixel();
    pixel.emit(event('product_viewed', { productVariant: variant(1) }, { path: '/products/aurora-mug-1' }));
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    expect(pixel.beacons).toHaveLength(1);
    expect(pixel.beacons[0]!.url).toBe(SANDBOX_ENDPOINT);
    expect(pixel.batches()[0]).toStrictEqual({
      ...envelope,
      customer: null,
      events: [
        {
          id: 'sh-00001-test',
          name: 'product_viewed',
          timestamp: '2026-11-23T10:00:01.000Z',
          url: `${SHOP}/products/aurora-mug-1`,
          data: { productVariant: trimmedVariant(1) },
        },
      ],
    });
  });

  it('writes the body as compact JSON with the documented key order', () => {
    const pixel = loadPixel();
    pixel.emit(event('page_viewed', {}, { path: '/' }));
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    expect(pixel.beacons[0]!.body).toBe(
      `{"v":1,"key":"${PIXEL_KEY}","client_id":"${CLIENT_ID}","consent":{"marketing":true,"analytics":true},"customer":null,` +
        `"events":[{"id":"sh-00001-test","name":"page_viewed","timestamp":"2026-11-23T10:00:01.000Z","url":"${SHOP}/","data":{}}]}`,
    );
  });

  it('sends product_added_to_cart at once, with the cart line’s quantity and merchandise ids (no cost)', () => {
    const pixel = loadPixel();
    pixel.emit(event('product_added_to_cart', { cartLine: cartLine(2, 3) }, { path: '/products/aurora-mug-2' }));
    expect(pixel.batches()[0]!.events).toStrictEqual([
      {
        id: 'sh-00001-test',
        name: 'product_added_to_cart',
        timestamp: '2026-11-23T10:00:01.000Z',
        url: `${SHOP}/products/aurora-mug-2`,
        data: { cartLine: { quantity: 3, merchandise: trimmedVariant(2) } },
      },
    ]);
  });

  it('sends cart_viewed with the cart id and total quantity, without its lines, cost or attributes', () => {
    const pixel = loadPixel();
    pixel.emit(event('cart_viewed', { cart: cart() }, { path: '/cart' }));
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    expect(pixel.batches()[0]!.events[0]!.data).toStrictEqual({ cart: { id: 'Z2NwLXVzLWVhc3QxOjAxSEQ', totalQuantity: 2 } });
  });

  it('sends cart_viewed of an empty cart (data.cart null) with empty data', () => {
    const pixel = loadPixel();
    pixel.emit(event('cart_viewed', { cart: null }, { path: '/cart' }));
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    expect(pixel.batches()[0]!.events[0]!.data).toStrictEqual({});
  });

  it('sends checkout_started at once, with the token only: no email, address, phone, totals or line items', () => {
    const pixel = loadPixel();
    pixel.emit(event('checkout_started', { checkout: checkout() }, { path: '/checkouts/cn/c1' }));
    const [batch] = pixel.batches();
    expect(batch).toStrictEqual({
      ...envelope,
      customer: null,
      events: [
        {
          id: 'sh-00001-test',
          name: 'checkout_started',
          timestamp: '2026-11-23T10:00:01.000Z',
          url: `${SHOP}/checkouts/cn/c1`,
          data: { checkout: trimmedCheckout() },
        },
      ],
    });
    expect(pixel.beacons[0]!.body).not.toMatch(/@|Ottawa|\+1613|Jane|Aurora|42\.5/);
  });

  it('sends checkout_contact_info_submitted at once, its email as the batch customer and not inside data', () => {
    const pixel = loadPixel();
    pixel.emit(event('checkout_contact_info_submitted', { checkout: checkout() }, { path: '/checkouts/cn/c1/information' }));
    expect(pixel.batches()).toStrictEqual([
      {
        ...envelope,
        customer: { email: CHECKOUT_EMAIL },
        events: [
          {
            id: 'sh-00001-test',
            name: 'checkout_contact_info_submitted',
            timestamp: '2026-11-23T10:00:01.000Z',
            url: `${SHOP}/checkouts/cn/c1/information`,
            data: { checkout: trimmedCheckout() },
          },
        ],
      },
    ]);
  });

  it('sends search_submitted with the query only, not the result variants', () => {
    const pixel = loadPixel();
    pixel.emit(
      event('search_submitted', { searchResult: { query: 'mug', productVariants: [variant(1), variant(2)] } }, { path: '/search?q=mug' }),
    );
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    expect(pixel.batches()[0]!.events[0]!.data).toStrictEqual({ searchResult: { query: 'mug' } });
  });

  it('omits absent and null fields instead of filling them with null', () => {
    const pixel = loadPixel();
    const sparse = {
      id: '41',
      title: null,
      sku: null,
      price: { amount: 5, currencyCode: 'EUR' },
      image: null,
      product: { id: '71', title: 'Bare', type: null, url: null, vendor: 'V' },
    };
    const bare = { id: null, product: { id: '72' } };
    pixel.emit({ ...event('product_viewed', { productVariant: bare }), context: undefined } as never);
    pixel.emit({ ...event('product_viewed', { productVariant: sparse }), context: undefined } as never);
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    const [first, sent] = pixel.batches()[0]!.events;
    expect(first!.data).toStrictEqual({ productVariant: { product: { id: '72' } } });
    expect(sent).toStrictEqual({
      id: 'sh-00002-test',
      name: 'product_viewed',
      timestamp: '2026-11-23T10:00:02.000Z',
      data: { productVariant: { id: '41', product: { id: '71' } } },
    });
  });
});
