// The admin page against Built for Shopify's loading bar (LCP ≤ 2.5 s, CLS ≤ 0.1, INP ≤ 200 ms),
// measured in Chromium on a connected shop with data, at a desktop (1280×900) and a phone
// (390×844) viewport: CLS and LCP on load, INP over the main actions (an event switch, the
// delivery log's status filter, Send test event). axe-core's WCAG 2 A/AA check runs on the same
// page, with every card loaded.
//
// CLS is asserted: how far the layout moves as the cards load is the page's, whatever the
// machine. LCP and INP are times of this machine's browser, shared with the rest of the suite:
// they are printed in the table after the tests, against the bar, and not asserted.
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { sampleCheckout, sampleCustomer, sampleOrder } from '../../sandbox/samples';
import { DEFAULT_SHOP } from '../helpers/stack';
import { describeWithChromium, openAdminPage, SCREENSHOT_DIR, startE2E, waitForText, type E2E } from './helpers';
import { axeViolations, cls, describeShifts, inp, lcp, recorded, recordVitals, THRESHOLDS } from './vitals';

const SLOW = 120_000;
const HOUR_MS = 3_600_000;
const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

interface Measured {
  viewport: string;
  cls: number;
  lcpMs: number | null;
  inpMs: number;
  interactions: string;
  shifts: string;
}

describeWithChromium('the admin page meets Built for Shopify’s Web Vitals', () => {
  let e: E2E;
  const measured: Measured[] = [];

  beforeAll(async () => {
    e = await startE2E();
    const s = e.stack;
    const { shopId } = await s.connectShop();
    // a shop with a day's worth of everything the cards show: deliveries (a full log page and
    // the hourly chart), a scheduled abandonment, and a week of sends per event
    for (let i = 0; i < 4; i++) {
      await s.webhook('orders/create', sampleOrder(7000 + i));
      await s.webhook('customers/create', sampleCustomer(7100 + i));
      await s.webhook('checkouts/create', sampleCheckout(7200 + i));
    }
    await s.until(
      async () => (await s.app.db.outboxMessage.count({ where: { status: 'delivered' } })) >= 12,
      60_000,
      'the store events to be delivered',
    );
    const thisHour = Math.floor(Date.now() / HOUR_MS) * HOUR_MS;
    const usage = [
      { eventName: 'viewed_product', deliveryClass: 2, sends: 900, expired: 40 },
      { eventName: 'added_to_cart', deliveryClass: 2, sends: 300, expired: 0 },
      { eventName: 'order_placed', deliveryClass: 0, sends: 60, expired: 0 },
      { eventName: 'checkout_started', deliveryClass: 1, sends: 90, expired: 0 },
    ];
    const rows = [];
    for (let h = 0; h < 7 * 24; h += 6)
      for (const u of usage) rows.push({ shopId, hour: new Date(thisHour - h * HOUR_MS), ...u, sends: Math.round(u.sends / 28) });
    await s.app.db.deliveryUsage.createMany({ data: rows });
  }, SLOW);

  afterAll(async () => {
    if (measured.length) {
      const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
      process.stdout.write(
        [
          '',
          line([
            'viewport',
            `CLS (≤ ${THRESHOLDS.clsMax}, asserted)`,
            `LCP (≤ ${THRESHOLDS.lcpMaxMs} ms, printed)`,
            `INP (≤ ${THRESHOLDS.inpMaxMs} ms, printed)`,
            'worst interaction per action',
          ]),
          line(['---', '---', '---', '---', '---']),
          ...measured.map((m) =>
            line([
              m.viewport,
              m.cls.toFixed(3),
              m.lcpMs === null ? 'none' : `${Math.round(m.lcpMs)} ms`,
              `${Math.round(m.inpMs)} ms`,
              m.interactions,
            ]),
          ),
          '',
          ...measured
            .filter((m) => m.shifts)
            .map((m) => `layout shifts on load at ${m.viewport} (time, score, what moved):\n${m.shifts}\n`),
        ].join('\n'),
      );
    }
    await e?.close();
  });

  async function openAt(viewport: (typeof VIEWPORTS)[number]): Promise<{ context: BrowserContext; page: Page }> {
    const context = await e.browser.newContext({
      viewport: { width: viewport.width, height: viewport.height },
      locale: 'en-US',
      timezoneId: 'UTC',
    });
    await context.route('https://cdn.shopify.com/**', (route) => route.abort('internetdisconnected'));
    await recordVitals(context);
    const page = await context.newPage();
    page.setDefaultTimeout(30_000);
    return { context, page };
  }

  /** Every card's first load in, and a quiet second after it (a shift then would still count). */
  async function loaded(page: Page): Promise<void> {
    await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
    await page.waitForFunction(() => document.querySelectorAll('main [aria-busy="true"], main .loading').length === 0, undefined, {
      timeout: 30_000,
    });
    await page.waitForTimeout(1_500);
  }

  for (const viewport of VIEWPORTS) {
    it(
      `loads without shifting at ${viewport.width}×${viewport.height}, and its main actions run (LCP and INP printed)`,
      async () => {
        const { context, page } = await openAt(viewport);
        try {
          await page.goto(`${e.stack.app.url}/`, { waitUntil: 'domcontentloaded' });
          await loaded(page);
          const load = await recorded(page);
          const loadCls = cls(load.shifts);
          const loadLcp = lcp(load.lcp);

          // the main actions, as a merchant does them (an event switch and back, the delivery log's
          // status filter, Send test event), in three rounds: the page's INP is the median round's
          // worst interaction, as a lab measure takes the median of runs. One round's worst can be
          // the renderer waiting for a core the rest of the suite holds; a slow page is slow in all.
          const rounds: Array<ReturnType<typeof inp>> = [];
          for (let round = 0; round < 3; round++) {
            const before = (await recorded(page)).events.length;
            const toggle = page.locator('#event-product_ordered');
            await toggle.scrollIntoViewIfNeeded();
            await toggle.click();
            await waitForText(page.locator('#event-product_ordered-state'), /^Saved$/);
            await toggle.click();
            await waitForText(page.locator('#event-product_ordered-state'), /^Saved$/);
            const filter = page.locator('#delivery-status');
            await filter.scrollIntoViewIfNeeded();
            await filter.click();
            await page.keyboard.press('Escape');
            const result = page.locator('#test-event-result');
            const previous = /Test event #(\d+)/.exec((await result.textContent()) ?? '')?.[1];
            const send = page.locator('#send-test-event');
            await send.scrollIntoViewIfNeeded();
            await send.click();
            const sent = await waitForText(result, /Test event #\d+ (queued|delivered|delivering)|Delivering/);
            if (previous) expect(sent).not.toContain(`#${previous} `);
            await page.waitForTimeout(500);
            rounds.push(inp((await recorded(page)).events.slice(before)));
          }
          const interactions = [...rounds].sort((a, b) => a.inp - b.inp)[1]!;
          const worst =
            [...interactions.byInteraction.values()].map((x) => `${x.name} on ${x.target}: ${Math.round(x.duration)} ms`).join('; ') ||
            'every entry under 16 ms';
          measured.push({
            viewport: `${viewport.width}×${viewport.height}`,
            cls: loadCls,
            lcpMs: loadLcp,
            inpMs: interactions.inp,
            interactions: `${worst} (rounds: ${rounds.map((r) => Math.round(r.inp)).join(' / ')} ms)`,
            shifts: describeShifts(load.shifts),
          });

          expect({ cls: loadCls, shifts: loadCls > THRESHOLDS.clsMax ? describeShifts(load.shifts) : '' }).toEqual({
            cls: expect.any(Number),
            shifts: '',
          });
          expect(loadCls).toBeLessThanOrEqual(THRESHOLDS.clsMax);
          // the browser saw a largest contentful paint (how soon is the table's figure)
          expect(loadLcp).not.toBeNull();
        } finally {
          await context.close();
        }
      },
      SLOW,
    );
  }

  it(
    'shows the delivery budget: the limit, each class, the banner, and each event’s 7-day volume and share',
    async () => {
      const page = e.page;
      await openAdminPage(e);
      const api = (await e.stack.api('GET', '/api/budget')).body;
      const card = page.locator('#budget-card');
      await waitForText(card.locator('#budget-limit .stat__value'), new RegExp(`^${api.limit_per_sec} a second$`));
      expect(await card.locator('#budget-limit .stat__note').textContent()).toBe(
        `${(api.limit_per_sec * 3600).toLocaleString('en-US')} requests an hour`,
      );
      expect(await card.locator('#budget-shops .stat__value').textContent()).toBe('1 shop');
      // one row a class, highest priority first, with the answer's numbers
      expect(
        await card.locator('#budget-classes tbody tr').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.class)),
      ).toEqual(['critical', 'triggers', 'behaviour', 'history']);
      const behaviour = api.classes.find((c: { class: string }) => c.class === 'behaviour');
      const cells = await card.locator('#budget-classes tr[data-class="behaviour"] td').allTextContents();
      expect(cells).toEqual([
        behaviour.sent_1h.toLocaleString('en-US'),
        '0',
        '—',
        '—',
        behaviour.expired_24h.toLocaleString('en-US'),
        '10%',
      ]);
      expect(behaviour.expired_24h).toBeGreaterThan(0);
      // storefront events expired: the banner says why and what helps, naming the noisiest events
      const banner = card.locator('#budget-status .banner');
      await waitForText(banner, /storefront events expired unsent in the last 24 hours/);
      expect(await banner.textContent()).toMatch(/switch off the events no workflow of yours uses.*Viewed product, \d+%.*higher limit/);
      expect(await card.locator('[data-warning="behaviour_expiring"]').count()).toBe(1);
      expect(await card.locator('[data-warning="critical_waiting"]').count()).toBe(0);

      // the events card: each event's sends over 7 days and its share of the budget
      const viewed = api.events_7d.find((x: { event_name: string }) => x.event_name === 'viewed_product');
      const line = page.locator('#events-card .volume[data-event="viewed_product"]');
      await waitForText(
        line,
        new RegExp(
          `^7 days: ${viewed.sends.toLocaleString('en-US')} sent · ${Math.round(viewed.share * 100)}% of the delivery budget · ${viewed.expired.toLocaleString('en-US')} expired$`,
        ),
      );
      expect(await page.locator('#events-card .volume[data-event=""]').first().textContent()).toBe('7 days: none sent');
      await card.screenshot({ path: path.join(SCREENSHOT_DIR, 'budget-card.png'), animations: 'disabled' });

      // critical work waiting three minutes (the worker stopped): a second banner, at the next refresh
      await e.stack.app.worker.stop();
      try {
        const shop = await e.stack.app.db.shop.findUniqueOrThrow({ where: { domain: DEFAULT_SHOP } });
        const due = new Date(Date.now() - 180_000);
        await e.stack.app.db.outboxMessage.create({
          data: {
            shopId: shop.id,
            sourceId: 'budget-e2e:waiting',
            topic: 'orders/create',
            eventName: 'order_placed',
            deliveryClass: 0,
            body: '{}',
            status: 'queued',
            runAt: due,
            dueAt: due,
          },
        });
        await page.click('#refresh-activity');
        await waitForText(card.locator('[data-warning="critical_waiting"]'), /^Critical events .* have waited 3 min to be sent: 1 is due/);
        expect(await card.locator('#budget-classes tr[data-class="critical"] td').nth(1).textContent()).toBe('1');
        expect(await card.locator('#budget-classes tr[data-class="critical"] td').nth(2).textContent()).toBe('3 min');
        await card.screenshot({ path: path.join(SCREENSHOT_DIR, 'budget-card-critical-waiting.png'), animations: 'disabled' });
      } finally {
        e.stack.app.worker.start();
      }
    },
    SLOW,
  );

  it(
    'has no WCAG 2 A/AA violation (axe-core) with every card loaded, the budget and its banner too, at both sizes',
    async () => {
      await e.page.reload();
      await e.page.waitForSelector('body[data-ready="true"]');
      await e.page.waitForFunction(() => document.querySelectorAll('main [aria-busy="true"], main .loading').length === 0, undefined, {
        timeout: 30_000,
      });
      await e.page.locator('#budget-card [data-warning]').first().waitFor();
      expect(await axeViolations(e.page)).toEqual([]);
      // and on a phone, where the tables scroll sideways
      await e.page.setViewportSize({ width: 390, height: 844 });
      try {
        expect(await axeViolations(e.page)).toEqual([]);
      } finally {
        await e.page.setViewportSize({ width: 1280, height: 900 });
      }
      expect(e.pageErrors).toEqual([]);
    },
    SLOW,
  );
});
