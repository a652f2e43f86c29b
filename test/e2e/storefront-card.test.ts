// The admin page's storefront card in Chromium: once the pixel is active it shows the last day's
// checks (emails Shopify confirmed, claims waiting, claims expired, events over a limit, events
// waiting for Shopify's product data, unknown products dropped, events that never got product
// data), from the same answer as the pixel's state, in seven fixed tiles.
import { randomUUID } from 'node:crypto';
import { activatePixel, batch, BEANIE, ev, knownCustomer, MUG, sendBatch, type Product } from '../helpers/pixel';
import { DEFAULT_SHOP } from '../helpers/stack';
import { describeWithChromium, openAdminPage, startE2E, waitForText, type E2E } from './helpers';

describeWithChromium('the storefront card of the admin page', () => {
  let e: E2E;
  beforeAll(async () => {
    e = await startE2E();
  }, 90_000);
  afterAll(async () => {
    await e?.close();
  });

  it('shows the last day’s counts of the storefront’s trust checks beside the pixel’s state', async () => {
    const s = e.stack;
    await s.connectShop();
    const key = await activatePixel(s);
    const ghost: Product = { id: '999999101', title: 'Ghost', variantId: '999999102', price: 1 };
    // a customer Shopify knows (vouched), a forged email (pending), a product the shop does not have (dropped)
    const customer = randomUUID();
    await sendBatch(s, batch(key, customer, [ev.view(MUG), ev.view(ghost)], { email: knownCustomer(s, 'card.customer@example.com') }));
    await sendBatch(s, batch(key, randomUUID(), [ev.view(MUG)], { email: 'someone.else@example.org' }));
    // Shopify failing: a view of a product not described yet waits for its data
    const end = s.shop.degrade(DEFAULT_SHOP, { only: /\bnodes\s*\(/, status: 503 });
    await sendBatch(s, batch(key, customer, [ev.view(BEANIE)]));
    end();

    await openAdminPage(e);
    const row = e.page.locator('#permissions-card li[data-feature="storefront_pixel"]');
    await waitForText(row.locator('[data-pixel-state]'), /Active/);
    const tile = (count: string) => row.locator(`[data-count="${count}"] .stat__value`);
    expect(await row.locator('[data-count]').count()).toBe(7);
    await waitForText(tile('claims_vouched'), /^1$/);
    expect(await tile('claims_pending').textContent()).toBe('1');
    expect(await tile('products_dropped').textContent()).toBe('1');
    expect(await tile('claims_expired').textContent()).toBe('0');
    expect(await tile('events_limited').textContent()).toBe('0');
    expect(await tile('products_waiting').textContent()).toBe('1');
    expect(await tile('products_expired').textContent()).toBe('0');
    expect(await row.textContent()).toMatch(/Storefront checks, last 24 hours/);
    expect(e.pageErrors).toEqual([]);
    await e.screenshot('storefront-card');
  }, 90_000);
});
