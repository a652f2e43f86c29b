// The sandbox storefront's server side, without a browser: which pixel a page loads and with
// what settings, the Shopify-shaped event data it publishes, and the AJAX cart and contact step.
import { startFakeShop, type FakeShop } from '../../../sandbox/fake-shop';
import { pixelKeyOf } from '../../../sandbox/fake-shop/storefront';

const configOf = (html: string) => JSON.parse(/<script id="sandbox-storefront" type="application\/json">(.*?)<\/script>/s.exec(html)![1]!);

describe('sandbox storefront', () => {
  let shop: FakeShop;
  let key: string | null = null;
  beforeAll(async () => {
    shop = await startFakeShop({
      apiKey: 'k',
      apiSecret: 's',
      host: '127.0.0.1',
      shops: [{ domain: 'demo-store.myshopify.com', id: '548380009', name: 'Demo Store' }],
      storefront: { appUrl: 'https://connector.example.com', pixelKey: () => key },
    });
  });
  afterAll(() => shop.close());

  it('reads the pixel key from the web pixel settings JSON the app sends to webPixelCreate', () => {
    expect(pixelKeyOf('{"pixelKey":"pk_1"}')).toBe('pk_1');
    for (const bad of [null, undefined, '', 'not json', '{}', '{"pixelKey":""}', '{"pixelKey":7}']) expect(pixelKeyOf(bad)).toBeNull();
  });

  it('says "pixel not active" and loads no pixel while there is no key', async () => {
    key = null;
    const html = await (await fetch(`${shop.url}/`)).text();
    expect(html).toContain('pixel not active');
    expect(configOf(html).pixel).toMatchObject({ active: false, settings: null });
  });

  it('gives the pixel its key and the endpoint, and publishes page_viewed then product_viewed with a Shopify ProductVariant', async () => {
    key = 'pk_test_1';
    const config = configOf(await (await fetch(`${shop.url}/products/aurora-mug`)).text());
    expect(config.pixel).toMatchObject({
      active: true,
      settings: { pixelKey: 'pk_test_1' },
      endpoint: 'https://connector.example.com/pixel/events',
    });
    expect(config.events.map((e: { name: string }) => e.name)).toEqual(['page_viewed', 'product_viewed']);
    expect(config.events[1].data.productVariant).toEqual({
      id: '45101',
      title: 'Default Title',
      untranslatedTitle: 'Default Title',
      sku: 'MUG-AUR',
      price: { amount: 18, currencyCode: 'USD' },
      image: { src: `${shop.url}/_sandbox/storefront/images/aurora-mug.svg` },
      product: {
        id: '8101',
        title: 'Aurora Mug',
        untranslatedTitle: 'Aurora Mug',
        type: 'Kitchen',
        url: '/products/aurora-mug',
        vendor: 'Demo Store',
      },
    });
  });

  it('serves the real pixel bundle, built for the configured app URL', async () => {
    const res = await fetch(`${shop.url}/_sandbox/storefront/pixels/email-pixel.js`);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    const code = await res.text();
    expect(code).toContain('shopify.extend(');
    expect(code).toContain('https://connector.example.com');
  });

  it('keeps a cart (cart/add.js), then a checkout whose contact step stores the email', async () => {
    const added = await fetch(`${shop.url}/cart/add.js`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: '45102', quantity: 2 }),
    });
    const cookie = added.headers.get('set-cookie')!.split(';')[0]!;
    const body = await added.json();
    expect(body.cartLine).toMatchObject({
      quantity: 2,
      cost: { totalAmount: { amount: 48, currencyCode: 'USD' } },
      merchandise: { id: '45102' },
    });
    expect(body.cart).toMatchObject({ totalQuantity: 2 });

    const checkoutPage = configOf(await (await fetch(`${shop.url}/checkout`, { headers: { cookie } })).text());
    expect(checkoutPage.events.map((e: { name: string }) => e.name)).toEqual(['page_viewed', 'checkout_started']);
    expect(checkoutPage.events[1].data.checkout).toMatchObject({
      email: null,
      totalPrice: { amount: 48 },
      lineItems: [{ title: 'Canvas Tote', quantity: 2 }],
    });

    const contact = await fetch(`${shop.url}/checkout/contact`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie },
      body: JSON.stringify({ email: 'a@example.com' }),
    });
    expect((await contact.json()).checkout).toMatchObject({ email: 'a@example.com', token: checkoutPage.events[1].data.checkout.token });
    expect((await fetch(`${shop.url}/checkout`, { redirect: 'manual' })).status).toBe(302); // no cart, no checkout
  });
});
