// End-to-end harness: the whole stack in-process (app + service emulator + fake shop) with the
// admin page mounted as in `npm run dev`, and Debian's Chromium driven by playwright-core.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { createDevSessionMinter } from '../../src/http/dev-session';
import type { UiRoutesDeps } from '../../src/http/ui.routes';
import { sampleCheckout, sampleCustomer, sampleOrder } from '../../sandbox/samples';
import { testConfig } from '../helpers/config';
import { TestClock } from '../helpers/clock';
import { API_KEY, API_SECRET, DEFAULT_SHOP, startStack, type Stack } from '../helpers/stack';
import { browserSkipReason, chromiumPath } from '../setup/chromium';

/** Debian's chromium, or CHROMIUM_PATH. The e2e project's globalSetup has made sure it is there. */
export const CHROMIUM_PATH = chromiumPath();
export const SCREENSHOT_DIR = path.join(__dirname, 'screenshots');
export const DOCS_SCREENSHOT = path.resolve(__dirname, '..', '..', 'docs', 'screenshot.png');

// Flags for a root user on a closed network (see the machine notes): no sandbox, no GPU, and
// no background connections to Google. playwright adds --headless and a fresh profile itself.
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/**
 * describe() for tests that drive the browser. They always run: the e2e globalSetup
 * (test/setup/global-setup.ts) installs Chromium or stops the run. Only SKIP_BROWSER_TESTS=1
 * skips them, and then every test shows as skipped in Jest's summary, with the reason.
 */
export function describeWithChromium(name: string, fn: () => void): void {
  const skip = browserSkipReason();
  if (!skip) {
    describe(name, fn);
    return;
  }
  process.stderr.write(`e2e: skipping "${name}": ${skip}\n`);
  describe.skip(`${name} (skipped: ${skip})`, fn);
}

export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM_PATH))
    throw new Error(`${CHROMIUM_PATH} is missing: run "sudo apt-get install -y chromium" (or bash scripts/ensure-chromium.sh)`);
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
}

/** A fresh browser context and page for a storefront visit; errors collects page errors (and console errors when asked). */
export async function openStorefrontPage(
  browser: Browser,
  opts: { consoleErrors?: boolean } = {},
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, locale: 'en-US', timezoneId: 'UTC' });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  if (opts.consoleErrors) {
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(msg.text());
    });
  }
  return { context, page, errors };
}

export const SIMULATE_TOPICS = ['orders/create', 'orders/paid', 'customers/create', 'checkouts/create'];

/** A fresh sample payload per call (distinct ids, so nothing is deduplicated). */
export function samplePayload(topic: string, n: number): unknown {
  if (topic.startsWith('orders/')) return sampleOrder(n);
  if (topic.startsWith('customers/')) return sampleCustomer(n);
  if (topic.startsWith('checkouts/')) return sampleCheckout(n);
  throw new Error(`no sample payload for ${topic}`);
}

export interface CapturedResponse {
  url: string;
  status: number;
  body: Buffer;
}

export interface E2E {
  stack: Stack;
  /** The app's clock: real time, which a test may move forward instead of waiting. */
  clock: TestClock;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Every response the page received, with its body. */
  responses(): Promise<CapturedResponse[]>;
  /** Uncaught errors in the page. */
  pageErrors: string[];
  screenshot(name: string, opts?: { fullPage?: boolean }): Promise<string>;
  close(): Promise<void>;
}

/** `ui`: sandbox extras for the page beside the harness's own (the Simulate panel, the dev minter). */
export async function startE2E(opts: { ui?: Partial<Omit<UiRoutesDeps, 'config'>> } = {}): Promise<E2E> {
  let stack: Stack | undefined;
  let n = 1000;
  // The page as the composition root mounts it in sandbox mode, plus a Simulate panel wired to
  // this stack's fake shop (as dev.ts does). The minter is passed explicitly so the suite does
  // not depend on whether server.ts supplies one by default.
  const sameKeys = testConfig('file:./unused-by-the-page.db', { SHOPIFY_API_KEY: API_KEY, SHOPIFY_API_SECRET: API_SECRET });
  const ui: Omit<UiRoutesDeps, 'config'> = {
    mintDevSessionToken: createDevSessionMinter(sameKeys),
    simulate: async (topic, shop) => {
      if (!stack) throw new Error('the stack is not started yet');
      return stack.webhook(topic, samplePayload(topic, ++n), { domain: shop });
    },
    simulateTopics: SIMULATE_TOPICS,
    devShop: DEFAULT_SHOP,
    ...opts.ui,
  };
  const clock = new TestClock();
  stack = await startStack({ server: { ui, now: clock.now } });
  const browser = await launchChromium().catch(async (err: unknown) => {
    await stack!.close();
    throw err;
  });
  const context = await browser.newContext({
    viewport: { width: 1280, height: 900 },
    locale: 'en-US',
    timezoneId: 'UTC',
    reducedMotion: 'reduce',
  });
  // No internet here: refuse the CDN at once, so the page is tested as it stands without Polaris.
  await context.route('https://cdn.shopify.com/**', (route) => route.abort('internetdisconnected'));
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);

  const captured: Array<Promise<CapturedResponse>> = [];
  page.on('response', (res) => {
    captured.push(
      res.body().then(
        (body) => ({ url: res.url(), status: res.status(), body }),
        () => ({ url: res.url(), status: res.status(), body: Buffer.alloc(0) }),
      ),
    );
  });
  const pageErrors: string[] = [];
  page.on('pageerror', (err) => pageErrors.push(err.message));

  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return {
    stack,
    clock,
    browser,
    context,
    page,
    pageErrors,
    responses: () => Promise.all(captured),
    async screenshot(name, opts = {}) {
      const file = path.join(SCREENSHOT_DIR, `${name}.png`);
      await page.screenshot({ path: file, fullPage: opts.fullPage ?? true, animations: 'disabled', caret: 'hide' });
      return file;
    },
    async close() {
      await browser.close().catch(() => undefined);
      await stack!.close();
    },
  };
}

/** Waits until the locator's text matches, polling; the failure names what was last seen. */
export async function waitForText(locator: Locator, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    last =
      (await locator
        .first()
        .textContent({ timeout: 1_000 })
        .catch(() => null)) ?? '';
    if (pattern.test(last)) return last;
    if (Date.now() > end)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${pattern} (last text: ${JSON.stringify(last.slice(0, 300))})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Opens the page as the merchant would and waits for every card's first load. */
export async function openAdminPage(e: E2E): Promise<void> {
  await e.page.goto(`${e.stack.app.url}/`, { waitUntil: 'domcontentloaded' });
  await e.page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
}
