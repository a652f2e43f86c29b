// The embedded admin page in Debian's Chromium, against the whole stack in sandbox mode. The
// tests run in order on one page, like a merchant's session: connect, test, recover, configure.
import fs from 'node:fs';
import path from 'node:path';
import { sampleCustomer } from '../../sandbox/samples';
import { API_SECRET } from '../helpers/stack';
import { DOCS_SCREENSHOT, describeWithChromium, openAdminPage, startE2E, waitForText, type E2E } from './helpers';

const SLOW = 90_000;

describeWithChromium('the embedded admin page, in a real browser against the sandbox', () => {
  let e: E2E;
  let serviceKey: string;
  let workspaceId: string;

  beforeAll(async () => {
    e = await startE2E();
    const ws = e.stack.emulator.createWorkspace({ name: 'Acme Newsletter' });
    serviceKey = ws.apiKey;
    workspaceId = ws.id;
  }, SLOW);
  afterAll(async () => {
    await e?.close();
  });

  const page = () => e.page;
  const row = (event: string, status?: string) =>
    page().locator(`#delivery-log tr[data-event="${event}"]${status ? `[data-status="${status}"]` : ''}`);

  it(
    'opens in a plain browser with a dev session token and shows the shop as not connected',
    async () => {
      await openAdminPage(e);
      await waitForText(page().locator('#connection-status'), /Not connected/);
      expect(await page().locator('#delivery-log').textContent()).toMatch(/No deliveries yet/);
      expect(await page().locator('#lists-card').textContent()).toMatch(/Connect a valid API key/);
      // the sandbox page never loads App Bridge; the Simulate panel is there
      expect(await page().locator('script[src*="app-bridge"]').count()).toBe(0);
      expect(await page().locator('#simulate-card').isVisible()).toBe(true);
      await e.screenshot('01-not-connected');
    },
    SLOW,
  );

  it(
    'is keyboard friendly: the first Tab reaches the skip link, which moves focus to the content',
    async () => {
      await page().keyboard.press('Tab');
      expect(await page().evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
      await page().keyboard.press('Enter');
      expect(await page().evaluate(() => document.activeElement?.id)).toBe('main');
    },
    SLOW,
  );

  it(
    'shows the service refusing a wrong key inline, and stores nothing',
    async () => {
      await page().focus('#api-key');
      await page().keyboard.type('wrong-key-0123456789');
      await page().keyboard.press('Enter');
      const error = page().locator('#api-key-error');
      await waitForText(error, /This key was refused by the service/);
      expect(await page().getAttribute('#api-key', 'aria-invalid')).toBe('true');
      expect(await page().evaluate(() => document.activeElement?.id)).toBe('api-key');
      expect(await page().locator('#connection-status').textContent()).toMatch(/Not connected/);
      expect((await e.stack.api('GET', '/api/connection')).body.status).toBe('disconnected');
      await e.screenshot('02-key-refused');

      // an empty submit is caught before any request
      await page().fill('#api-key', '');
      await page().click('#connection-card button[type="submit"]');
      await waitForText(error, /Enter the API key/);
    },
    SLOW,
  );

  it(
    'explains a service outage while connecting, and changes nothing',
    async () => {
      e.stack.emulator.injectFault({ mode: 'status500', forMs: 60_000, path: '/webhook/api_key/validate' });
      try {
        await page().fill('#api-key', serviceKey);
        await page().click('#connection-card button[type="submit"]');
        await waitForText(page().locator('#api-key-error'), /could not be reached.*Nothing was changed/);
        expect((await e.stack.api('GET', '/api/connection')).body.status).toBe('disconnected');
      } finally {
        e.stack.emulator.clearFaults();
      }
    },
    SLOW,
  );

  it(
    'connects with the right key: Connected, with the workspace name, lists and custom fields',
    async () => {
      await page().fill('#api-key', serviceKey);
      await page().click('#connection-card button[type="submit"]');
      await waitForText(page().locator('#connection-status'), /^Connected$/);
      expect(await page().locator('#workspace-name').textContent()).toBe('Acme Newsletter');
      expect(await page().locator('#key-hint').textContent()).toBe(`…${serviceKey.slice(-4)}`);
      expect(await page().inputValue('#api-key')).toBe('');
      expect(await page().locator('#api-key-error').isHidden()).toBe(true);
      await waitForText(page().locator('#lists-card table'), /Newsletter.*VIP customers/s);
      await waitForText(page().locator('#properties-card .chips'), /Birthday/);
      // a property whose key matches an account field says so beside its switch
      expect(await page().locator('#property-first_name').locator('xpath=ancestor::li').textContent()).toMatch(
        /First name.*\u2194.*First name/s,
      );
      expect((await e.stack.api('GET', '/api/connection')).body).toMatchObject({ status: 'connected', workspace_id: workspaceId });
      await e.screenshot('03-connected');
    },
    SLOW,
  );

  it(
    'sends a test event and shows its delivery when it lands',
    async () => {
      await page().fill('#test-email', 'merchant@example.com');
      await page().click('#send-test-event');
      const text = await waitForText(page().locator('#test-event-result'), /Test event #\d+ delivered/, 60_000);
      const id = /#(\d+)/.exec(text)![1]!;
      expect(e.stack.emulator.events({ workspaceId, eventName: 'connector_test', email: 'merchant@example.com' })).toHaveLength(1);
      await page().locator(`#delivery-log tr[data-id="${id}"][data-status="delivered"]`).waitFor({ timeout: 30_000 });
      await waitForText(page().locator('#stat-delivered .stat__value'), /^[1-9]/);
      await e.screenshot('04-test-event-delivered');
    },
    SLOW,
  );

  it(
    'shows a delivery the service refused as dead, and delivers it when retried from the page',
    async () => {
      e.stack.emulator.injectFault({ mode: 'status400', count: 1, path: '/webhook/send/' });
      await page().click('#simulate-card button[data-topic="orders/paid"]');
      await waitForText(page().locator('#simulate-result'), /answered 200/);
      await row('order_paid', 'dead').waitFor({ timeout: 60_000 });
      await waitForText(page().locator('#stat-dead .stat__value'), /^1$/);
      expect(await row('order_paid', 'dead').locator('.result').textContent()).not.toBe('');

      // the status filter narrows the log to dead deliveries
      await page().selectOption('#delivery-status', 'dead');
      await page().waitForFunction(() => {
        const rows = [...document.querySelectorAll<HTMLElement>('#delivery-log tbody tr')];
        return rows.length > 0 && rows.every((r) => r.dataset.status === 'dead');
      });
      expect(
        await page()
          .locator('#delivery-log tbody tr')
          .evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.status)),
      ).toEqual(['dead']);
      await e.screenshot('05-delivery-dead');

      const id = await row('order_paid', 'dead').getAttribute('data-id');
      await page().click(`#delivery-log tr[data-id="${id}"] button`);
      await waitForText(page().locator('#live'), new RegExp(`Delivery ${id} \\(Order paid\\) delivered`), 60_000);
      await waitForText(page().locator('#delivery-log'), /No dead deliveries/);
      await page().selectOption('#delivery-status', '');
      await page().locator(`#delivery-log tr[data-id="${id}"][data-status="delivered"]`).waitFor({ timeout: 30_000 });
      expect(e.stack.emulator.events({ workspaceId, eventName: 'order_paid' })).toHaveLength(1);
      await waitForText(page().locator('#stat-dead .stat__value'), /^0$/);
      await e.screenshot('06-delivery-retried');
    },
    SLOW,
  );

  it(
    'says so while received webhooks wait for stage 2, and clears once they are processed',
    async () => {
      await e.stack.app.processor.stop();
      try {
        await page().click('#simulate-card button[data-topic="orders/paid"]');
        await waitForText(page().locator('#simulate-result'), /answered 200/);
        // shown once the oldest has waited past LAG_NOTICE_AFTER_S (5 s) by the app's clock, at the next refresh
        e.clock.advance(6_000);
        await page().click('#refresh-activity');
        await waitForText(page().locator('#intake-lag'), /Received, not yet processed: 1 \(the oldest \d+ s ago\)/);
      } finally {
        e.stack.app.processor.start();
      }
      await e.stack.settle();
      await page().click('#refresh-activity');
      await page().locator('#intake-lag').waitFor({ state: 'detached', timeout: 30_000 });
    },
    SLOW,
  );

  it(
    'turns an event off from the keyboard, and the next webhook of its topic is ignored',
    async () => {
      const before = (await e.stack.api('GET', '/api/deliveries?limit=100')).body.deliveries.length;
      const paidBefore = e.stack.emulator.events({ workspaceId, eventName: 'order_paid' }).length;
      await page().focus('#event-order_paid');
      await page().keyboard.press('Space');
      await waitForText(page().locator('#event-order_paid-state'), /^Saved$/);
      expect(await page().isChecked('#event-order_paid')).toBe(false);
      expect((await e.stack.api('GET', '/api/settings')).body.events).toMatchObject({ order_paid: false, order_placed: true });

      const receiptsBefore = await e.stack.app.db.webhookReceipt.count({ where: { topic: 'orders/paid' } });
      await page().click('#simulate-card button[data-topic="orders/paid"]');
      // stored (stage 1, the 200), then processed (stage 2): the outcome is written by the second
      const receipt = await e.stack.until(
        async () =>
          (
            await e.stack.app.db.webhookReceipt.findMany({ where: { topic: 'orders/paid' }, orderBy: { id: 'asc' }, skip: receiptsBefore })
          ).filter((r) => r.processedAt !== null),
        30_000,
        'the orders/paid receipt, processed',
      );
      expect(receipt[0]).toMatchObject({ outcome: 'ignored', reason: 'event order_paid is turned off' });
      // the receipt and any deliveries are written in one transaction: nothing was queued
      expect((await e.stack.api('GET', '/api/deliveries?limit=100')).body.deliveries).toHaveLength(before);
      expect(e.stack.emulator.events({ workspaceId, eventName: 'order_paid' })).toHaveLength(paidBefore);
      await e.screenshot('07-event-turned-off');

      // and the switch survives a reload
      await openAdminPage(e);
      expect(await page().isChecked('#event-order_paid')).toBe(false);
    },
    SLOW,
  );

  it(
    'fills the activity chart as store events are delivered',
    async () => {
      await page().selectOption('#delivery-status', '');
      for (const topic of ['orders/create', 'customers/create', 'checkouts/create']) {
        await page().click(`#simulate-card button[data-topic="${topic}"]`);
        await waitForText(page().locator('#simulate-result'), new RegExp(`${topic}.*answered 200`));
      }
      await row('order_placed', 'delivered').waitFor({ timeout: 60_000 });
      await row('customer_created', 'delivered').waitFor({ timeout: 60_000 });
      await row('checkout_started', 'delivered').waitFor({ timeout: 60_000 });
      // the abandonment event waits for its delay, shown as scheduled
      await waitForText(row('checkout_abandoned', 'queued').locator('.result'), /Scheduled in/);
      await waitForText(page().locator('#stat-delivered .stat__value'), /^([4-9]|\d\d+)$/, 30_000);
      const summary = await page().locator('#chart-desc').textContent();
      expect(summary).toMatch(/\d+ deliveries in the last 24 hours/);
      expect(await page().locator('.chart__bar[height]:not([height="0"])').count()).toBeGreaterThan(0);
      await page().evaluate(() => window.scrollTo(0, 0));
      const file = await e.screenshot('08-connected-with-activity');
      // The README's picture: written when missing, or on demand (UPDATE_DOCS_SCREENSHOT=1).
      if (!fs.existsSync(DOCS_SCREENSHOT) || process.env.UPDATE_DOCS_SCREENSHOT === '1') {
        fs.mkdirSync(path.dirname(DOCS_SCREENSHOT), { recursive: true });
        // the connection and activity cards, down to the end of the delivery log
        const box = (await page().locator('#activity-card').boundingBox())!;
        await page().screenshot({
          path: DOCS_SCREENSHOT,
          fullPage: true,
          clip: { x: 0, y: 0, width: 1280, height: Math.ceil(box.y + box.height + 16) },
          animations: 'disabled',
          caret: 'hide',
        });
      }
      expect(fs.statSync(file).size).toBeGreaterThan(10_000);
    },
    SLOW,
  );

  it(
    'pages through the delivery log with Older and Newer',
    async () => {
      for (let i = 0; i < 3; i++) await e.stack.webhook('customers/create', sampleCustomer(5000 + i));
      const all: Array<{ id: string }> = await e.stack.until(
        async () => {
          const res = await e.stack.api('GET', '/api/deliveries?limit=100');
          return res.body.deliveries.length > 10 ? res.body.deliveries : null;
        },
        30_000,
        'more than a page of deliveries',
      );
      const ids = () =>
        page()
          .locator('#delivery-log tbody tr')
          .evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.id));
      await page().click('#refresh-activity');
      await page().waitForFunction(
        (newest) => document.querySelector<HTMLElement>('#delivery-log tbody tr')?.dataset.id === newest,
        all[0]!.id,
      );
      expect(await ids()).toEqual(all.slice(0, 10).map((d) => d.id));

      await page().click('button:has-text("Older")');
      await page().waitForFunction(
        (first) => document.querySelector<HTMLElement>('#delivery-log tbody tr')?.dataset.id === first,
        all[10]!.id,
      );
      expect(await ids()).toEqual(all.slice(10, 20).map((d) => d.id));
      expect(await page().locator('.pager').textContent()).toMatch(/Page 2/);

      await page().click('button:has-text("Newer")');
      await page().waitForFunction(
        (newest) => document.querySelector<HTMLElement>('#delivery-log tbody tr')?.dataset.id === newest,
        all[0]!.id,
      );
      expect(await page().isDisabled('button:has-text("Newer")')).toBe(true);
    },
    SLOW,
  );

  it(
    'saves the storefront settings; a number out of range is refused inline and nothing is saved',
    async () => {
      const input = page().locator('#setting-cart_abandonment_delay_minutes');
      const save = page().locator('button:has-text("Save storefront settings")');
      expect(await input.inputValue()).toBe('60');
      await input.fill('2');
      await save.click();
      await waitForText(page().locator('#setting-cart_abandonment_delay_minutes-error'), /from 5 to 10080/);
      expect((await e.stack.api('GET', '/api/settings')).body.cart_abandonment_delay_minutes).toBe(60);

      await input.fill('30');
      await page().locator('#setting-storefront_events_per_email_day').fill('50');
      await save.click();
      await waitForText(page().locator('#live'), /Storefront settings saved/);
      expect(await page().locator('#setting-cart_abandonment_delay_minutes-error').isHidden()).toBe(true);
      expect((await e.stack.api('GET', '/api/settings')).body).toMatchObject({
        cart_abandonment_delay_minutes: 30,
        storefront_events_per_email_day: 50,
        browse_abandonment_delay_minutes: 60,
      });
      // only what the merchant changed is stored: the browse delay it left alone stays the default
      const stored = JSON.parse((await e.stack.app.db.shopSettings.findFirstOrThrow()).data);
      expect(stored).toMatchObject({ cart_abandonment_delay_minutes: 30, storefront_events_per_email_day: 50 });
      expect(stored).not.toHaveProperty('browse_abandonment_delay_minutes');
      await save.click();
      await waitForText(page().locator('#live'), /Nothing to save: no value changed/);
    },
    SLOW,
  );

  it(
    'asks for confirmation before disconnecting, and Cancel keeps the connection',
    async () => {
      await page().click('#connection-card button:has-text("Disconnect")');
      const dialog = page().locator('#disconnect-dialog');
      await dialog.waitFor({ state: 'visible' });
      await e.screenshot('09-disconnect-confirmation', { fullPage: false });
      await page().keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      expect((await e.stack.api('GET', '/api/connection')).body.status).toBe('connected');
    },
    SLOW,
  );

  it(
    'disconnects after confirmation: Not connected, and what is queued is held',
    async () => {
      await page().click('#connection-card button:has-text("Disconnect")');
      await page().locator('#disconnect-dialog').waitFor({ state: 'visible' });
      await page().click('#disconnect-dialog button[value="confirm"]');
      await waitForText(page().locator('#connection-status'), /Not connected/);
      await waitForText(page().locator('#live'), /Disconnected/);
      expect(await page().evaluate(() => document.activeElement?.id)).toBe('api-key');
      expect((await e.stack.api('GET', '/api/connection')).body.status).toBe('disconnected');
      // the scheduled abandonment event is held until a key is connected again
      await page().selectOption('#delivery-status', 'held');
      await row('checkout_abandoned', 'held').waitFor();
      expect(await row('checkout_abandoned', 'held').locator('.result').textContent()).toMatch(/disconnected/);
      await waitForText(page().locator('#lists-card'), /Connect a valid API key/);
      await e.screenshot('10-disconnected-held');
    },
    SLOW,
  );

  it(
    'gives every control an accessible name and has no uncaught script errors',
    async () => {
      const unnamed = await page().evaluate(() => {
        const controls = [...document.querySelectorAll<HTMLElement>('input, select, button, textarea, a[href]')].filter(
          (el) => el.offsetParent !== null,
        );
        return controls
          .filter((el) => {
            const labelled = (el as HTMLInputElement).labels?.length || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
            return !labelled && !(el.textContent ?? '').trim();
          })
          .map((el) => el.outerHTML.slice(0, 120));
      });
      expect(unnamed).toEqual([]);
      expect(e.pageErrors).toEqual([]);
    },
    SLOW,
  );

  it(
    'never shows the service API key or a session token in the HTML or any response',
    async () => {
      const html = await page().content();
      const responses = await e.responses();
      const devTokens = responses.filter((r) => new URL(r.url).pathname === '/_dev/session-token');
      expect(devTokens.length).toBeGreaterThan(0);
      const tokens = devTokens.map((r) => JSON.parse(r.body.toString('utf8')).token as string);
      const others = responses.filter((r) => !devTokens.includes(r));
      expect(others.some((r) => new URL(r.url).pathname === '/api/connection')).toBe(true);

      // the service key (right or wrong) and the app secret: nowhere, not even in the dev token response
      for (const secret of [serviceKey, 'wrong-key-0123456789', API_SECRET]) {
        expect(html).not.toContain(secret);
        for (const r of responses) expect({ url: r.url, leaks: r.body.includes(secret) }).toEqual({ url: r.url, leaks: false });
      }
      // the session tokens: only in the sandbox's token endpoint that minted them
      for (const token of tokens) {
        expect(html).not.toContain(token);
        for (const r of others) expect({ url: r.url, leaks: r.body.includes(token) }).toEqual({ url: r.url, leaks: false });
      }
      // no JWT at all outside the sandbox's own token endpoint
      for (const r of others)
        expect({ url: r.url, jwt: /eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+/.test(r.body.toString('utf8')) }).toEqual({ url: r.url, jwt: false });
      expect(await page().evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }))).not.toContain(
        serviceKey,
      );
    },
    SLOW,
  );
});
