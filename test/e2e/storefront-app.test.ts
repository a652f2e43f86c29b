// The storefront pixel end to end, in Chromium: the sandbox storefront runs the REAL pixel bundle
// (in a web worker, as Shopify's strict sandbox does) and sends to the REAL app. The simulated shop
// sends the app the checkout's signed webhooks, which vouch for the email given at checkout, so the
// app stitches the visitor to it and sends the events, with Shopify's product data, to the
// service emulator.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startFakeShop, type FakeShop } from '../../sandbox/fake-shop';
import { pixelKeyOf } from '../../sandbox/fake-shop/storefront';
import { TestClock } from '../helpers/clock';
import { activatePixel } from '../helpers/pixel';
import { API_KEY, API_SECRET, DEFAULT_SHOP, startStack, type Stack } from '../helpers/stack';
import { describeWithChromium, launchChromium, openStorefrontPage, waitForText } from './helpers';

const EMAIL = 'stitched.shopper@example.com';

describeWithChromium('the storefront pixel, through the app, to the email service', () => {
  let s: Stack;
  let storefront: FakeShop;
  let browser: Browser;
  let workspaceId: string;
  let shopId: string;
  const clock = new TestClock();

  beforeAll(async () => {
    s = await startStack({ server: { now: clock.now } });
    ({ workspaceId, shopId } = await s.connectShop());
    await activatePixel(s);
    // the storefront of the shop, running the pixel with the settings the app gave webPixelCreate,
    // and sending its checkouts' webhooks signed with the app's secret, as Shopify does
    storefront = await startFakeShop({
      apiKey: API_KEY,
      apiSecret: API_SECRET,
      host: '127.0.0.1',
      shops: [{ domain: DEFAULT_SHOP, id: '548380009', name: 'Demo Store' }],
      storefront: { appUrl: s.app.url, webhooks: true, pixelKey: () => pixelKeyOf(s.shop.webPixel(DEFAULT_SHOP)?.settings) },
    });
    browser = await launchChromium();
  }, 90_000);
  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await storefront?.close();
    await s?.close();
  });

  const open = () => openStorefrontPage(browser);
  const clientIdOf = async (context: BrowserContext) => (await context.cookies(storefront.url)).find((c) => c.name === '_shopify_y')!.value;
  /** Waits until stage 2 has stored (anonymous) events of this client id. */
  const waiting = (clientId: string, n: number) =>
    s.until(
      async () => ((await s.app.db.pixelEvent.count({ where: { shopId, clientId } })) >= n ? true : null),
      15_000,
      `${n} waiting events of ${clientId}`,
    );

  async function viewProduct(page: Page, title: string): Promise<void> {
    await page.getByRole('link', { name: 'Demo Store' }).click();
    await page.getByRole('link', { name: title }).click();
    await page.getByRole('heading', { name: title }).waitFor();
  }

  it('sends viewed_product ×2 and added_to_cart ×1 for the email typed at checkout once the checkout’s webhook vouches for it, stitched to the earlier browsing', async () => {
    const { context, page, errors } = await open();
    try {
      await page.goto(`${storefront.url}/`);
      await waitForText(page.locator('#pixel-status'), /pixel active: events go to http:\/\/127\.0\.0\.1:\d+\/pixel\/events/);
      const clientId = await clientIdOf(context);
      // a view's batch leaves on the pixel's 1-second timer: the shopper stays until it has
      await viewProduct(page, 'Aurora Mug');
      await waiting(clientId, 1);
      await viewProduct(page, 'Canvas Tote');
      await waiting(clientId, 2);
      await page.getByRole('button', { name: 'Add to cart' }).click();
      await page.getByText('Added to your cart.').waitFor();
      // anonymous so far: the two views and the add wait for an email; nothing is sent
      await waiting(clientId, 3);
      expect(s.emulator.events({ workspaceId })).toEqual([]);

      await page.getByRole('link', { name: 'View cart' }).click();
      await page.getByRole('link', { name: 'Check out' }).click();
      await page.getByRole('heading', { name: 'Checkout' }).waitFor();
      await page.getByLabel('Email').fill(EMAIL);
      await page.getByRole('button', { name: 'Continue to shipping' }).click();
      await page.getByText('Contact information saved.').waitFor();

      await s.until(() => s.emulator.events({ workspaceId, email: EMAIL }).length >= 4, 15_000, 'the stitched events at the service');
      await new Promise((r) => setTimeout(r, 1_500));
      const sent = s.emulator.events({ workspaceId });
      // the checkout's own webhook sends checkout_started too
      expect(sent.map((e) => e.event_name).sort()).toEqual(['added_to_cart', 'checkout_started', 'viewed_product', 'viewed_product']);
      expect(new Set(sent.map((e) => e.email))).toEqual(new Set([EMAIL]));
      expect(
        sent
          .filter((e) => e.event_name === 'viewed_product')
          .map((e) => e.event_attribute.product_title)
          .sort(),
      ).toEqual(['Aurora Mug', 'Canvas Tote']);
      expect(sent.find((e) => e.event_name === 'added_to_cart')!.event_attribute).toMatchObject({
        product_title: 'Canvas Tote',
        quantity: 1,
        price: 24,
        currency: 'USD',
        cart_total: 24,
        sku: 'TOTE-CNV',
        product_url: `https://${DEFAULT_SHOP}/products/canvas-tote`,
        image_url: `${s.shop.url}/_sandbox/product-images/canvas-tote.svg`,
      });
      expect(await s.app.db.pixelVisitor.findUnique({ where: { shopId_clientId: { shopId, clientId } } })).toMatchObject({ email: EMAIL });
      expect(await s.app.db.pixelEvent.count({ where: { shopId, clientId } })).toBe(0);
      // the merchant sees them in the admin page's delivery log
      const log = await s.api('GET', '/api/deliveries?status=delivered');
      expect(log.body.deliveries.map((d: { event_name: string }) => d.event_name).sort()).toEqual([
        'added_to_cart',
        'checkout_started',
        'viewed_product',
        'viewed_product',
      ]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('sends nothing for a shopper who never gives an email, and erases their events once the window has passed', async () => {
    // (the first shopper's checkout_abandoned falls due when the clock moves on: only other emails count here)
    const others = () => s.emulator.events({ workspaceId }).filter((e) => e.email !== EMAIL);
    const before = others().length;
    const { context, page, errors } = await open();
    let clientId: string;
    try {
      await page.goto(`${storefront.url}/`);
      await waitForText(page.locator('#pixel-status'), /pixel active/);
      clientId = await clientIdOf(context);
      await viewProduct(page, 'Wool Beanie');
      await page.getByRole('button', { name: 'Add to cart' }).click();
      await page.getByText('Added to your cart.').waitFor();
      await waiting(clientId, 2);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
    await s.settle();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(others()).toHaveLength(before);
    expect(await s.app.db.pixelVisitor.count({ where: { shopId, clientId } })).toBe(0);

    clock.advance(24 * 3_600_000 + 60_000);
    await s.app.sweepStorefront();
    expect(await s.app.db.pixelEvent.count({ where: { shopId, clientId } })).toBe(0);
    expect(await s.app.db.pixelEvent.count({ where: { shopId } })).toBe(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(others()).toHaveLength(before);
  }, 120_000);
});
