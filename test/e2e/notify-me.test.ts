// The notify-me block in Chromium: the sandbox storefront renders the REAL app block
// (extensions/notify-me, with liquidjs) and loads its REAL script; the block posts through the
// storefront's app proxy, which signs like Shopify, to the REAL app, which checks the variant with
// the fake Shopify and stores the subscription. The shopper opens a sold-out size, sees the form,
// switches to a size on sale (the form goes) and back, subscribes, and reads the answer; nothing on
// the page moves, and axe finds nothing to fault.
import type { Browser, Page } from 'playwright-core';
import { startFakeShop, type FakeShop } from '../../sandbox/fake-shop';
import { SANDBOX_CUSTOMER } from '../../sandbox/fake-shop/storefront-data';
import { API_KEY, API_SECRET, DEFAULT_SHOP, startStack, type Stack } from '../helpers/stack';
import { describeWithChromium, launchChromium, openStorefrontPage, waitForText } from './helpers';
import { axeViolations, cls, describeShifts, recorded, recordVitals } from './vitals';

const SMALL = '45105'; // sold out when the shop starts
const EMAIL = 'waiting.shopper@example.com';

describeWithChromium('the notify-me block on the sandbox storefront, through the app proxy, to the app', () => {
  let s: Stack;
  let storefront: FakeShop;
  let browser: Browser;
  let shopId: string;

  beforeAll(async () => {
    s = await startStack();
    ({ shopId } = await s.connectShop());
    // the catalog check needs read_products, as the back-in-stock feature does
    await s.webhook('app/scopes_update', s.shop.grantScopes(DEFAULT_SHOP, ['read_products']));
    storefront = await startFakeShop({
      apiKey: API_KEY,
      apiSecret: API_SECRET,
      host: '127.0.0.1',
      shops: [{ domain: DEFAULT_SHOP, id: '548380009', name: 'Demo Store' }],
      storefront: { appUrl: s.app.url, webhooks: true, pixelKey: () => null },
    });
    browser = await launchChromium();
  }, 90_000);
  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await storefront?.close();
    await s?.close();
  });

  const block = (page: Page) => page.locator('[data-notify-me]');
  const status = (page: Page) => page.locator('[data-notify-me-status]');

  it('shows the form for a sold-out size only, follows the size picked, subscribes a guest, and moves nothing', async () => {
    const { context, page, errors } = await openStorefrontPage(browser, { consoleErrors: true });
    await recordVitals(context);
    try {
      await page.goto(`${storefront.url}/products/merino-socks?variant=${SMALL}`);
      await page.getByRole('heading', { name: 'Merino Socks' }).waitFor();
      const form = page.getByRole('form', { name: /back in stock/ });
      await form.waitFor();
      expect(await block(page).isVisible()).toBe(true);
      expect(await page.getByRole('button', { name: 'Sold out' }).isDisabled()).toBe(true);
      // the script has loaded and taken the page as it found it
      await page.waitForFunction(() => (window as unknown as { __notifyMe?: boolean }).__notifyMe === true);
      await page.waitForTimeout(300);
      const loaded = await recorded(page);
      expect([cls(loaded.shifts), describeShifts(loaded.shifts)]).toEqual([0, '']);
      expect(await axeViolations(page)).toEqual([]);

      await page.getByLabel('Medium').check();
      await block(page).waitFor({ state: 'hidden' });
      expect(page.url()).toContain('variant=45106');
      await page.getByLabel('Small (sold out)').check();
      await block(page).waitFor({ state: 'visible' });
      expect(await block(page).locator('[name="variant_id"]').inputValue()).toBe(SMALL);

      await page.getByLabel('Email', { exact: true }).fill(EMAIL);
      await page.getByRole('button', { name: 'Email me when available' }).click();
      await waitForText(status(page), /We'll email you when it's back in stock/);
      expect(await status(page).getAttribute('class')).toContain('notify-me__status--success');
      const row = await s.until(
        () => s.app.db.stockSubscription.findFirst({ where: { shopId, email: EMAIL } }),
        10_000,
        'the subscription',
      );
      expect(row).toMatchObject({ variantId: SMALL, productId: '8105', source: 'guest', customerId: null });

      // the answer took the space kept for it: nothing shifted without the shopper's own input
      const after = await recorded(page);
      expect([cls(after.shifts), describeShifts(after.shifts)]).toEqual([0, '']);
      expect(await axeViolations(page)).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 90_000);

  it('shows the app’s refusal of an invalid email in the live region, and stores nothing', async () => {
    const { context, page, errors } = await openStorefrontPage(browser, { consoleErrors: true });
    try {
      await page.goto(`${storefront.url}/products/merino-socks?variant=${SMALL}`);
      await page.getByLabel('Email', { exact: true }).fill('typo@example');
      await page.getByRole('button', { name: 'Email me when available' }).click();
      await waitForText(status(page), /valid email address/);
      expect(await page.getByLabel('Email', { exact: true }).getAttribute('aria-invalid')).toBe('true');
      expect(await s.app.db.stockSubscription.count({ where: { email: 'typo@example' } })).toBe(0);
      // the 422 is the page's answer to show, not a script error
      expect(errors.filter((e) => !/status of 422/.test(e))).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('subscribes a signed-in customer with the email Shopify has for them', async () => {
    const { context, page, errors } = await openStorefrontPage(browser, { consoleErrors: true });
    try {
      await page.goto(`${storefront.url}/products/merino-socks?variant=${SMALL}`);
      await page.getByRole('button', { name: /Sign in as Jane/ }).click();
      await page.getByText('Signed in as Jane Sandbox').waitFor();
      const email = page.getByLabel('Email', { exact: true });
      expect(await email.inputValue()).toBe(SANDBOX_CUSTOMER.email);
      expect(await email.getAttribute('readonly')).not.toBeNull();
      await page.getByRole('button', { name: 'Email me when available' }).click();
      await waitForText(status(page), /back in stock/);
      const row = await s.until(
        () => s.app.db.stockSubscription.findFirst({ where: { shopId, customerId: SANDBOX_CUSTOMER.id } }),
        10_000,
        "the customer's subscription",
      );
      expect(row).toMatchObject({ email: SANDBOX_CUSTOMER.email, source: 'customer', variantId: SMALL });
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('restocks the size from the sandbox controls: the app hears variants/in_stock, and the form goes', async () => {
    const { context, page } = await openStorefrontPage(browser);
    try {
      await page.goto(`${storefront.url}/products/merino-socks?variant=${SMALL}`);
      await page.getByRole('button', { name: 'Restock Small' }).click();
      await page.getByRole('button', { name: 'Sell out Small' }).waitFor();
      expect(await block(page).isHidden()).toBe(true);
      expect(await page.getByRole('button', { name: 'Add to cart' }).isEnabled()).toBe(true);
      const topics = await s.until(
        async () => {
          const got = (await s.app.db.webhookReceipt.findMany({ where: { shopDomain: DEFAULT_SHOP }, select: { topic: true } })).map(
            (r) => r.topic,
          );
          return got.includes('variants/in_stock') && got.includes('products/update') ? got : null;
        },
        10_000,
        'the stock webhooks at the app',
      );
      expect(topics).toEqual(expect.arrayContaining(['variants/in_stock', 'products/update']));
      expect(storefront.inventory(DEFAULT_SHOP, SMALL)).toBe(10);
    } finally {
      await context.close();
    }
  }, 60_000);
});
