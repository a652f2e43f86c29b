// The production page in a real browser: every /api call carries a token from App Bridge's
// shopify.idToken(). App Bridge itself comes from Shopify's CDN, which this machine cannot
// reach, so the test serves a stand-in at the CDN address that asks the fake shop for tokens.
import { loadConfig, SANDBOX_DEFAULTS } from '../../src/config';
import { uiRoutes } from '../../src/http/ui.routes';
import { API_KEY, API_SECRET, DEFAULT_SHOP, startStack, type Stack } from '../helpers/stack';
import { describeWithChromium, launchChromium, waitForText } from './helpers';
import type { Browser } from 'playwright-core';

const SLOW = 90_000;

describeWithChromium('the embedded page in production mode (App Bridge tokens)', () => {
  let stack: Stack;
  let browser: Browser;
  const minted = new Set<string>();

  beforeAll(async () => {
    const production = loadConfig({
      NODE_ENV: 'production',
      DATABASE_URL: 'file:./unused.db',
      SHOPIFY_API_KEY: API_KEY,
      SHOPIFY_API_SECRET: API_SECRET,
      SHOPIFY_APP_URL: 'https://connector.example.com',
      SERVICE_BASE_URL: 'https://service.example.com',
      ENCRYPTION_KEY: SANDBOX_DEFAULTS.ENCRYPTION_KEY,
    });
    stack = await startStack({ server: { routers: [uiRoutes({ config: production })] } });
    browser = await launchChromium();
  }, SLOW);
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  async function openPage(withAppBridge: boolean) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.route('https://cdn.shopify.com/**', async (route) => {
      if (withAppBridge && route.request().url().endsWith('/app-bridge.js')) {
        return route.fulfill({ contentType: 'text/javascript', body: 'window.shopify = { idToken: () => window.__mintIdToken() };' });
      }
      return route.abort('internetdisconnected');
    });
    const page = await context.newPage();
    await page.exposeFunction('__mintIdToken', () => {
      const token = stack.shop.mintSessionToken(DEFAULT_SHOP);
      minted.add(token);
      return token;
    });
    const authHeaders: Array<{ path: string; auth: string | undefined }> = [];
    const paths: string[] = [];
    page.on('request', (req) => {
      const url = new URL(req.url());
      paths.push(url.pathname);
      if (url.pathname.startsWith('/api/')) authHeaders.push({ path: url.pathname, auth: req.headers().authorization });
    });
    await page.goto(`${stack.app.url}/?shop=${DEFAULT_SHOP}&host=YWRtaW4uc2hvcGlmeS5jb20vc3RvcmUvZGVtbw&embedded=1`);
    return { context, page, authHeaders, paths };
  }

  it(
    'uses a fresh App Bridge token for every /api call, and never asks for a dev token',
    async () => {
      const { context, page, authHeaders, paths } = await openPage(true);
      await page.waitForSelector('body[data-ready="true"]');
      await waitForText(page.locator('#connection-status'), /Not connected/);
      expect(await page.locator('#simulate-card').isVisible()).toBe(false);
      expect(await page.locator('meta[name="shopify-api-key"]').getAttribute('content')).toBe(API_KEY);

      expect(authHeaders.length).toBeGreaterThanOrEqual(5);
      for (const h of authHeaders) expect(minted.has(String(h.auth).replace(/^Bearer /, ''))).toBe(true);
      // (this stack's server runs a sandbox config; that a production server has no /_dev routes
      // at all is checked in ui-routes.test.ts)
      expect(paths.filter((p) => p.startsWith('/_dev/'))).toEqual([]);
      await page.screenshot({ path: `${__dirname}/screenshots/11-production-app-bridge.png`, fullPage: false });
      await context.close();
    },
    SLOW,
  );

  it(
    'says to open the app from Shopify admin when App Bridge is not there',
    async () => {
      const { context, page, authHeaders } = await openPage(false);
      await waitForText(page.locator('#page-banner'), /Open this app from your Shopify admin/);
      expect(authHeaders).toEqual([]);
      await context.close();
    },
    SLOW,
  );
});
