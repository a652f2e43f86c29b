// What the pixel may say about the shopper: an email only where the pixel API gives one (a
// logged-in customer in init, or the contact step of checkout), always Shopify's client id, and
// the visitor's consent; nothing once the visitor withdraws the consent the pixel requires.
import { FLUSH_DELAY_MS } from '../../../extensions/email-pixel/src/pixel';
import { fullPrivacy, loadPixel } from './harness';
import { cart, cartLine, checkout, CHECKOUT_EMAIL, CLIENT_ID, event, loggedInCustomer, resetSeq, variant } from './fixtures';

/** A shopper's whole visit, contact step excluded. Event data carries emails where Shopify's does. */
function browse(pixel: ReturnType<typeof loadPixel>): void {
  pixel.emit(event('page_viewed', {}, { path: '/products/aurora-mug-1' }));
  pixel.emit(event('product_viewed', { productVariant: variant(1) }));
  pixel.emit(event('product_added_to_cart', { cartLine: cartLine(1, 1) }));
  pixel.emit(event('page_viewed', {}, { path: '/cart' }));
  pixel.emit(event('cart_viewed', { cart: cart() }));
  jest.advanceTimersByTime(FLUSH_DELAY_MS);
  pixel.emit(event('checkout_started', { checkout: checkout(CHECKOUT_EMAIL) }));
}

describe('pixel privacy', () => {
  beforeEach(() => {
    jest.useFakeTimers();
    resetSeq();
  });
  afterEach(() => jest.useRealTimers());

  it('sends no email for a guest, even when checkout events carry one in their data', () => {
    const pixel = loadPixel({ customer: null });
    browse(pixel);
    expect(pixel.beacons.length).toBeGreaterThanOrEqual(3);
    for (const batch of pixel.batches()) expect(batch.customer).toBeNull();
    for (const b of pixel.beacons) expect(b.body).not.toContain('@');
  });

  it('always sends Shopify’s client id', () => {
    const pixel = loadPixel();
    browse(pixel);
    expect(new Set(pixel.batches().map((b) => b.client_id))).toEqual(new Set([CLIENT_ID]));
  });

  it('keeps events of different client ids in different batches', () => {
    const pixel = loadPixel();
    pixel.emit(event('product_viewed', { productVariant: variant(1) }, { clientId: 'client-a' }));
    pixel.emit(event('product_viewed', { productVariant: variant(2) }, { clientId: 'client-b' }));
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    expect(pixel.batches().map((b) => [b.client_id, b.events.length])).toEqual([
      ['client-a', 1],
      ['client-b', 1],
    ]);
  });

  it('sends a logged-in customer’s email (init.data.customer.email) with every batch, and nothing else of the customer', () => {
    const pixel = loadPixel({ customer: loggedInCustomer() });
    browse(pixel);
    for (const batch of pixel.batches()) expect(batch.customer).toStrictEqual({ email: 'sam.buyer@example.com' });
    for (const b of pixel.beacons) expect(b.body).not.toMatch(/6001|Sam"|Buyer"|\+1555|jane\.doe/);
  });

  it('sends the contact step’s email in its own batch only: queued events go before it without it, later ones without it', () => {
    const pixel = loadPixel({ customer: null });
    pixel.emit(event('page_viewed', {}, { path: '/checkouts/c1' }));
    pixel.emit(event('checkout_contact_info_submitted', { checkout: checkout(' Jane.Doe@Example.com ') }));
    pixel.emit(event('page_viewed', {}, { path: '/checkouts/c1/shipping' }));
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    expect(pixel.batches().map((b) => [b.events.map((e) => e.name), b.customer])).toEqual([
      [['page_viewed'], null],
      [['checkout_contact_info_submitted'], { email: 'Jane.Doe@Example.com' }],
      [['page_viewed'], null],
    ]);
    expect(pixel.beacons.filter((b) => /jane/i.test(b.body))).toHaveLength(1);
  });

  it('prefers the contact step’s email to the logged-in one for the contact batch', () => {
    const pixel = loadPixel({ customer: loggedInCustomer() });
    pixel.emit(event('checkout_contact_info_submitted', { checkout: checkout(CHECKOUT_EMAIL) }));
    pixel.emit(event('checkout_started', { checkout: checkout(CHECKOUT_EMAIL) }));
    expect(pixel.batches().map((b) => b.customer)).toEqual([{ email: CHECKOUT_EMAIL }, { email: 'sam.buyer@example.com' }]);
  });

  it.each([[null], ['+16135551111'], ['not an email'], ['']])(
    'sends no customer when the contact step gives no usable email (%p)',
    (email) => {
      const pixel = loadPixel({ customer: null });
      pixel.emit(event('checkout_contact_info_submitted', { checkout: checkout(email) }));
      expect(pixel.batches().map((b) => b.customer)).toEqual([null]);
    },
  );

  it('passes the consent flags from init.customerPrivacy, and null when the API gives none', () => {
    const pixel = loadPixel({ customerPrivacy: { ...fullPrivacy(), preferencesProcessingAllowed: true } });
    pixel.emit(event('checkout_started', { checkout: checkout() }));
    expect(pixel.batches()[0]!.consent).toStrictEqual({ marketing: true, analytics: true });

    const unknown = loadPixel({ customerPrivacy: null });
    unknown.emit(event('checkout_started', { checkout: checkout() }));
    expect(unknown.batches()[0]!.consent).toStrictEqual({ marketing: null, analytics: null });
  });

  it('updates the consent on visitorConsentCollected', () => {
    const pixel = loadPixel({ customerPrivacy: null });
    pixel.consent({ ...fullPrivacy(), marketingAllowed: true, analyticsProcessingAllowed: true });
    pixel.emit(event('checkout_started', { checkout: checkout() }));
    expect(pixel.batches()[0]!.consent).toStrictEqual({ marketing: true, analytics: true });
  });

  it('stops sending, and drops what it queued, when the visitor withdraws marketing or analytics consent; resumes when given again', () => {
    const pixel = loadPixel();
    pixel.emit(event('product_viewed', { productVariant: variant(1) }));
    pixel.consent({ ...fullPrivacy(), marketingAllowed: false });
    jest.advanceTimersByTime(FLUSH_DELAY_MS);
    pixel.emit(event('product_added_to_cart', { cartLine: cartLine(1, 1) }));
    expect(pixel.beacons).toHaveLength(0);

    pixel.consent({ ...fullPrivacy(), analyticsProcessingAllowed: false });
    pixel.emit(event('checkout_started', { checkout: checkout() }));
    expect(pixel.beacons).toHaveLength(0);

    pixel.consent(fullPrivacy());
    pixel.emit(event('checkout_started', { checkout: checkout() }));
    expect(pixel.batches().map((b) => [b.events.map((e) => e.name), b.consent])).toEqual([
      [['checkout_started'], { marketing: true, analytics: true }],
    ]);
  });

  it('stays silent, subscribing to nothing, without a pixel key', () => {
    for (const settings of [{}, { pixelKey: '' }, { pixelKey: '   ' }, { pixelKey: 42 }]) {
      const pixel = loadPixel({ settings });
      expect(pixel.subscribed).toEqual([]);
    }
  });
});
