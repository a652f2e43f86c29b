// The sandbox storefront in Chromium, running the REAL pixel bundle in a web worker (the stand-in
// for Shopify's strict sandbox): a shopper views two products, adds one to the cart, and types
// an email at checkout; a capture server standing in for the app's POST /pixel/events checks
// what arrives.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import type { WireBatch } from '../../extensions/email-pixel/src/pixel';
import { startFakeShop, type FakeShop } from '../../sandbox/fake-shop';
import { describeWithChromium, launchChromium, openStorefrontPage, waitForText } from './helpers';

interface Captured {
  method: string;
  path: string;
  contentType: string;
  raw: string;
  batch: WireBatch;
}

async function startCapture(): Promise<{ url: string; requests: Captured[]; close(): Promise<void> }> {
  const requests: Captured[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let batch: WireBatch;
      try {
        batch = JSON.parse(raw) as WireBatch;
      } catch {
        batch = { events: [] } as unknown as WireBatch;
      }
      requests.push({ method: req.method ?? '', path: req.url ?? '', contentType: String(req.headers['content-type'] ?? ''), raw, batch });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const PIXEL_KEY = 'pk_test_storefront_e2e';
const EMAIL = 'shopper.e2e@example.com';

describeWithChromium('sandbox storefront with the web pixel', () => {
  let capture: Awaited<ReturnType<typeof startCapture>>;
  let shop: FakeShop;
  let browser: Browser;
  let pixelKey: string | null = null;

  beforeAll(async () => {
    capture = await startCapture();
    shop = await startFakeShop({
      apiKey: 'storefront-test-key',
      apiSecret: 'storefront-test-secret',
      host: '127.0.0.1',
      shops: [{ domain: 'demo-store.myshopify.com', id: '548380009', name: 'Demo Store' }],
      storefront: { appUrl: capture.url, pixelKey: () => pixelKey },
    });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await shop?.close();
    await capture?.close();
  });

  const open = () => openStorefrontPage(browser, { consoleErrors: true });

  /** Waits for a captured batch holding an event that matches, and returns that batch. */
  async function batchWith(match: (e: WireBatch['events'][number]) => boolean, what: string, timeoutMs = 10_000): Promise<WireBatch> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const found = capture.requests.find((r) => r.batch.events.some(match));
      if (found) return found.batch;
      if (Date.now() > end)
        throw new Error(
          `no beacon with ${what} after ${timeoutMs} ms; got ${JSON.stringify(capture.requests.map((r) => r.batch.events.map((e) => e.name)))}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  // the pixel sends a product's ids only (the app takes its title and price from Shopify)
  const PRODUCT_IDS: Record<string, string> = { 'Aurora Mug': '8101', 'Canvas Tote': '8102' };
  const productTitle = (e: WireBatch['events'][number]) => {
    const id = (e.data as { productVariant?: { product?: { id?: string } } }).productVariant?.product?.id;
    return Object.keys(PRODUCT_IDS).find((title) => PRODUCT_IDS[title] === id);
  };

  it('shows "pixel not active" and loads no pixel while the shop has no pixel key', async () => {
    pixelKey = null;
    const { context, page, errors } = await open();
    try {
      await page.goto(`${shop.url}/`);
      await waitForText(page.locator('#pixel-status'), /pixel not active/);
      await page.getByRole('link', { name: 'Aurora Mug' }).click();
      await page.getByRole('heading', { name: 'Aurora Mug' }).waitFor();
      await new Promise((r) => setTimeout(r, 1_500));
      expect(page.workers()).toHaveLength(0);
      expect(capture.requests).toHaveLength(0);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('sends a shopper’s visit in batches: products viewed, add to cart, cart, checkout, and the email only with the contact step', async () => {
    pixelKey = PIXEL_KEY;
    capture.requests.length = 0;
    const { context, page, errors } = await open();
    try {
      // home: page_viewed (collection_viewed is published too, and not subscribed)
      await page.goto(`${shop.url}/`);
      await waitForText(page.locator('#pixel-status'), /pixel active: events go to http:\/\/127\.0\.0\.1:\d+\/pixel\/events/);
      expect(page.workers().map((w) => new URL(w.url()).pathname)).toEqual(['/_sandbox/storefront/pixel-sandbox-worker.js']);
      await batchWith((e) => e.name === 'page_viewed' && e.url === `${shop.url}/`, 'the home page_viewed');

      // two product pages, each event batch sent by the timer before the shopper moves on
      await page.getByRole('link', { name: 'Aurora Mug' }).click();
      await page.getByTestId('price').filter({ hasText: '$18.00' }).waitFor();
      expect(await page.getByRole('img', { name: 'Aurora Mug' }).isVisible()).toBe(true);
      const first = await batchWith((e) => e.name === 'product_viewed' && productTitle(e) === 'Aurora Mug', 'product_viewed of Aurora Mug');
      expect(first.events.map((e) => e.name)).toEqual(['page_viewed', 'product_viewed']);

      await page.getByRole('link', { name: 'Demo Store' }).click();
      await until(
        () => capture.requests.flatMap((r) => r.batch.events).filter((e) => e.url === `${shop.url}/`).length === 2,
        'the second home page_viewed',
      );
      await page.getByRole('link', { name: 'Canvas Tote' }).click();
      await page.getByRole('heading', { name: 'Canvas Tote' }).waitFor();
      await batchWith((e) => e.name === 'product_viewed' && productTitle(e) === 'Canvas Tote', 'product_viewed of Canvas Tote');

      // add to cart is sent at once
      await page.getByRole('button', { name: 'Add to cart' }).click();
      await page.getByText('Added to your cart.').waitFor();
      await batchWith((e) => e.name === 'product_added_to_cart', 'product_added_to_cart', 3_000);
      expect(await page.locator('#cart-count').textContent()).toBe('1');

      // cart page
      await page.getByRole('link', { name: 'View cart' }).click();
      await page.getByRole('heading', { name: 'Your cart' }).waitFor();
      await batchWith((e) => e.name === 'cart_viewed', 'cart_viewed');

      // checkout: checkout_started at once, then the contact step with the email
      await page.getByRole('link', { name: 'Check out' }).click();
      await page.getByRole('heading', { name: 'Checkout' }).waitFor();
      const started = await batchWith((e) => e.name === 'checkout_started', 'checkout_started', 3_000);
      expect(started.events.map((e) => e.name)).toEqual(['page_viewed', 'checkout_started']);
      await page.getByLabel('Email').fill(EMAIL);
      await page.getByRole('button', { name: 'Continue to shipping' }).click();
      await page.getByText('Contact information saved.').waitFor();
      const contact = await batchWith((e) => e.name === 'checkout_contact_info_submitted', 'checkout_contact_info_submitted', 3_000);

      // every request: POST /pixel/events, text/plain (no CORS preflight), version, key, consent
      const requests = [...capture.requests];
      for (const r of requests) {
        expect([r.method, r.path, r.contentType]).toEqual(['POST', '/pixel/events', 'text/plain;charset=UTF-8']);
        expect(r.batch).toMatchObject({ v: 1, key: PIXEL_KEY, consent: { marketing: true, analytics: true } });
      }
      const batches = requests.map((r) => r.batch);
      const events = batches.flatMap((b) => b.events);

      // the right events, in order, none lost, none unsubscribed
      expect(events.map((e) => e.name).filter((n) => n !== 'page_viewed')).toEqual([
        'product_viewed',
        'product_viewed',
        'product_added_to_cart',
        'cart_viewed',
        'checkout_started',
        'checkout_contact_info_submitted',
      ]);
      expect(events.filter((e) => e.name === 'page_viewed').map((e) => new URL(e.url!).pathname)).toEqual([
        '/',
        '/products/aurora-mug',
        '/',
        '/products/canvas-tote',
        '/cart',
        '/checkout',
      ]);
      expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
      for (const e of events) expect(new Date(e.timestamp).toISOString()).toBe(e.timestamp);

      // batched: fewer requests than events, several events in some
      expect(batches.length).toBeLessThan(events.length);
      expect(Math.max(...batches.map((b) => b.events.length))).toBeGreaterThanOrEqual(2);

      // one stable client id, Shopify's _shopify_y cookie
      const cookie = (await context.cookies(shop.url)).find((c) => c.name === '_shopify_y');
      expect(cookie?.value).toBeTruthy();
      expect(new Set(batches.map((b) => b.client_id))).toEqual(new Set([cookie!.value]));

      // the email only in the contact step's batch, which holds nothing else
      expect(contact.customer).toEqual({ email: EMAIL });
      expect(contact.events.map((e) => e.name)).toEqual(['checkout_contact_info_submitted']);
      expect(batches.filter((b) => b.customer !== null)).toHaveLength(1);
      expect(requests.filter((r) => r.raw.includes(EMAIL))).toHaveLength(1);

      // trimmed, Shopify-shaped data: of a product, its ids only
      const added = events.find((e) => e.name === 'product_added_to_cart')!;
      expect(added.data).toEqual({ cartLine: { quantity: 1, merchandise: { id: '45102', product: { id: '8102' } } } });
      expect(events.find((e) => e.name === 'cart_viewed')!.data).toEqual({ cart: { id: expect.any(String), totalQuantity: 1 } });
      const checkout = (contact.events[0]!.data as { checkout: Record<string, unknown> }).checkout;
      expect(Object.keys(checkout).sort()).toEqual(['token']);
      expect(requests.filter((r) => /Canvas Tote|Aurora Mug|\$24|"amount"/.test(r.raw))).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 90_000);

  it('loads no pixel for a visitor who declined tracking', async () => {
    pixelKey = PIXEL_KEY;
    capture.requests.length = 0;
    const { context, page, errors } = await open();
    try {
      await page.goto(`${shop.url}/`);
      await waitForText(page.locator('#pixel-status'), /pixel active/);
      await page.getByRole('button', { name: 'Decline tracking' }).click();
      await page.getByRole('link', { name: 'Wool Beanie' }).click();
      await page.getByRole('heading', { name: 'Wool Beanie' }).waitFor();
      await waitForText(page.locator('#pixel-status'), /pixel not loaded: the visitor declined tracking/);
      await page.getByRole('button', { name: 'Add to cart' }).click();
      await page.getByText('Added to your cart.').waitFor();
      await new Promise((r) => setTimeout(r, 1_500));
      expect(capture.requests.flatMap((r) => r.batch.events.map((e) => e.name))).not.toContain('product_viewed');
      expect(capture.requests.flatMap((r) => r.batch.events.map((e) => e.name))).not.toContain('product_added_to_cart');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
