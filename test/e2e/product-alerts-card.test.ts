// The admin page's back in stock and price drops card in Chromium: the subscriptions waiting per
// variant and the last restocks and price drops, from Shopify's own signals through the whole
// stack; the link that adds the notify-me block (Shopify's theme editor, or in the sandbox the
// simulated storefront's sold-out product); the price-drop threshold, refused out of range and
// saved in range; no WCAG 2 A/AA violation, and nothing moves as the page loads, at both widths.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { activatePixel, batch, ev, knownCustomer, MUG, sendBatch } from '../helpers/pixel';
import { DEFAULT_SHOP } from '../helpers/stack';
import { describeWithChromium, openAdminPage, SCREENSHOT_DIR, startE2E, waitForText, type E2E } from './helpers';
import { axeViolations, cls, describeShifts, recorded, recordVitals } from './vitals';

const SLOW = 90_000;
const SMALL = '45105';
const LARGE = '45107';
const PREVIEW = { label: 'the sandbox’s sold-out socks', href: 'http://127.0.0.1:4011/products/merino-socks?variant=45105' };

describeWithChromium('the back in stock and price drops card of the admin page', () => {
  let e: E2E;
  let shopId: string;

  beforeAll(async () => {
    e = await startE2E();
    const s = e.stack;
    ({ shopId } = await s.connectShop());
    // the restock's read of the variant needs read_products, granted with the pixel's scopes
    const key = await activatePixel(s);
    const send = async (topic: string, payload: unknown) => {
      expect((await s.webhook(topic, payload, { webhookId: randomUUID() })).status).toBe(200);
    };
    const stock = async (variantId: string, quantity: number) => {
      for (const w of s.shop.setInventory(DEFAULT_SHOP, variantId, quantity)!.webhooks) await send(w.topic, w.payload);
    };
    const subscribe = (email: string, variantId: string) =>
      s.app.db.stockSubscription.create({
        data: {
          shopId,
          variantId,
          productId: '8105',
          email,
          source: 'guest',
          createdAt: new Date(),
          renewedAt: new Date(),
          expiresAt: new Date(Date.now() + 90 * 86_400_000),
        },
      });
    await subscribe('first.waiting@example.com', SMALL);
    await stock(SMALL, 4);
    await stock(LARGE, 0);
    for (const email of ['a.large@example.com', 'b.large@example.com', 'c.large@example.com']) await subscribe(email, LARGE);
    // the large size comes back and sells out again before the app reads it: nobody is told
    const back = s.shop.setInventory(DEFAULT_SHOP, LARGE, 2)!;
    const gone = s.shop.setInventory(DEFAULT_SHOP, LARGE, 0)!;
    for (const w of [...back.webhooks, ...gone.webhooks]) await send(w.topic, w.payload);
    // a shopper Shopify vouches for views the mug (Shopify describes it to the app), then its price is cut by a third
    knownCustomer(s, 'mug.viewer@example.com');
    expect(await sendBatch(s, batch(key, randomUUID(), [ev.view(MUG)], { email: 'mug.viewer@example.com' }))).toBe(204);
    await s.settle();
    await send('products/update', s.shop.setPrice(DEFAULT_SHOP, MUG.variantId, 12)!.payload);
    await s.app.runProductAlerts();
  }, SLOW);
  afterAll(async () => {
    await e?.close();
  });

  const card = () => e.page.locator('#alerts-card');

  it(
    'shows the waiting subscriptions and the last sends, and links to the theme editor',
    async () => {
      await openAdminPage(e);
      const api = (await e.stack.api('GET', '/api/product-alerts')).body;
      const rows = card().locator('#alerts-waiting-table tbody tr');
      await rows.first().waitFor();
      expect(await rows.evaluateAll((rs) => rs.map((r) => (r as HTMLElement).dataset.variant))).toEqual([LARGE]);
      expect(await rows.first().locator('td').allTextContents()).toEqual(['Merino Socks', 'Large', 'Sold out', '3', expect.any(String)]);

      const sends = card().locator('#alerts-recent-table tbody tr');
      expect(await sends.evaluateAll((rs) => rs.map((r) => [(r as HTMLElement).dataset.kind, (r as HTMLElement).dataset.state]))).toEqual([
        ['price_drop', 'done'],
        ['restock', 'done'],
        ['restock', 'done'],
      ]);
      const soldOutAgain = sends.nth(1).locator('td');
      expect(await soldOutAgain.nth(2).textContent()).toBe('Merino SocksLarge');
      expect(await soldOutAgain.nth(3).textContent()).toBe('Donesold out again before it could be announced');
      expect(await soldOutAgain.nth(4).textContent()).toBe('0');
      const restock = sends.nth(2).locator('td');
      expect(await restock.nth(1).textContent()).toBe('Back in stock');
      expect(await restock.nth(2).textContent()).toBe('Merino SocksSmall');
      expect(await restock.nth(3).textContent()).toBe('Done');
      expect(await restock.nth(4).textContent()).toBe('1');
      expect(await sends.first().locator('td').nth(1).textContent()).toBe('Price drop$18.00 → $12.00');

      expect(await card().locator('#alerts-waiting .stat__value').textContent()).toBe('3');
      expect(await card().locator('#alerts-waiting .stat__note').textContent()).toBe('for 1 variant');
      expect(await card().locator('#alerts-back_in_stock .stat__value').textContent()).toBe('1');

      // the block's deep link, opened in the admin (the top frame), not inside the app's iframe
      const link = card().getByRole('link', { name: 'Add the notify-me block to your theme' });
      expect(await link.getAttribute('href')).toBe(api.theme_editor_url);
      expect(await link.getAttribute('target')).toBe('_top');

      // the event switches say who each event goes to
      expect(await e.page.locator('#event-back_in_stock-hint').textContent()).toMatch(/notify-me form/);
      expect(await e.page.locator('#event-price_dropped-hint').textContent()).toMatch(/threshold/);
      expect(await axeViolations(e.page)).toEqual([]);
      expect(e.pageErrors).toEqual([]);
      await card().screenshot({ path: path.join(SCREENSHOT_DIR, 'product-alerts-card.png'), animations: 'disabled' });
    },
    SLOW,
  );

  it(
    'refuses a threshold of 0 or 95 beside the field, and saves 25',
    async () => {
      const field = card().getByLabel('Price drop threshold');
      const error = card().locator('#price-drop-threshold-error');
      const save = card().getByRole('button', { name: 'Save threshold' });
      for (const value of ['0', '95']) {
        await field.fill(value);
        await save.click();
        await waitForText(error, /^Enter a whole number of percent from 1 to 90\.$/);
        expect(await field.getAttribute('aria-invalid')).toBe('true');
        expect(await e.page.evaluate(() => document.activeElement?.id)).toBe('price-drop-threshold');
      }
      expect((await e.stack.api('GET', '/api/settings')).body.price_drop_threshold_percent).toBe(10);
      await field.fill('25');
      expect(await error.isHidden()).toBe(true);
      await save.click();
      await waitForText(e.page.locator('#live'), /Price drop threshold saved: 25%/);
      expect((await e.stack.api('GET', '/api/settings')).body.price_drop_threshold_percent).toBe(25);
      expect(await field.getAttribute('aria-invalid')).toBeNull();
    },
    SLOW,
  );

  for (const viewport of [
    { width: 1280, height: 900 },
    { width: 390, height: 844 },
  ]) {
    it(
      `loads with its rows without moving anything at ${viewport.width}×${viewport.height}`,
      async () => {
        const context = await e.browser.newContext({ viewport, locale: 'en-US', timezoneId: 'UTC' });
        try {
          await context.route('https://cdn.shopify.com/**', (route) => route.abort('internetdisconnected'));
          await recordVitals(context);
          const page = await context.newPage();
          await page.goto(`${e.stack.app.url}/`, { waitUntil: 'domcontentloaded' });
          await page.waitForSelector('body[data-ready="true"]');
          await page.waitForFunction(() => document.querySelectorAll('main [aria-busy="true"], main .loading').length === 0);
          await page.locator('#alerts-waiting-table tbody tr').first().waitFor();
          await page.waitForTimeout(1_000);
          const { shifts } = await recorded(page);
          expect([cls(shifts), describeShifts(shifts)]).toEqual([0, '']);
          expect(await axeViolations(page)).toEqual([]);
          await page
            .locator('#alerts-card')
            .screenshot({ path: path.join(SCREENSHOT_DIR, `product-alerts-card-${viewport.width}.png`), animations: 'disabled' });
        } finally {
          await context.close();
        }
      },
      SLOW,
    );
  }
});

describeWithChromium('the back in stock card in the sandbox, with a simulated storefront', () => {
  let e: E2E;
  beforeAll(async () => {
    e = await startE2E({ ui: { notifyMePreview: PREVIEW } });
  }, SLOW);
  afterAll(async () => {
    await e?.close();
  });

  it(
    'links to the storefront’s sold-out product, in a new tab, and says where the real link goes',
    async () => {
      await openAdminPage(e);
      const link = e.page.locator('#alerts-card').getByRole('link', { name: 'See the block on the sandbox storefront' });
      expect(await link.getAttribute('href')).toBe(PREVIEW.href);
      expect(await link.getAttribute('target')).toBe('_blank');
      expect(await e.page.locator('#add-notify-me-block-help').textContent()).toMatch(/theme editor/);
      // a shop with nothing waiting and nothing sent yet says so, in the same room
      expect(await e.page.locator('#alerts-waiting-list').textContent()).toMatch(/No one is waiting for a restock/);
      expect(await e.page.locator('#alerts-recent-list').textContent()).toMatch(/^Nothing yet/);
      expect(e.pageErrors).toEqual([]);
    },
    SLOW,
  );
});
