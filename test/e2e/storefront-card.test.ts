// The admin page's storefront card in Chromium: once the pixel is active it shows the last day's
// trust checks (emails Shopify confirmed, claims waiting, claims expired, unknown products dropped,
// events over a limit), from the same answer as the pixel's state, in five fixed tiles.
import { randomUUID } from 'node:crypto';
import { activatePixel, batch, ev, knownCustomer, MUG, sendBatch, type Product } from '../helpers/pixel';
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
    await sendBatch(s, batch(key, randomUUID(), [ev.view(MUG), ev.view(ghost)], { email: knownCustomer(s, 'card.customer@example.com') }));
    await sendBatch(s, batch(key, randomUUID(), [ev.view(MUG)], { email: 'someone.else@example.org' }));

    await openAdminPage(e);
    const row = e.page.locator('#permissions-card li[data-feature="storefront_pixel"]');
    await waitForText(row.locator('[data-pixel-state]'), /Active/);
    const tile = (count: string) => row.locator(`[data-count="${count}"] .stat__value`);
    expect(await row.locator('[data-count]').count()).toBe(5);
    await waitForText(tile('claims_vouched'), /^1$/);
    expect(await tile('claims_pending').textContent()).toBe('1');
    expect(await tile('products_dropped').textContent()).toBe('1');
    expect(await tile('claims_expired').textContent()).toBe('0');
    expect(await tile('events_limited').textContent()).toBe('0');
    expect(await row.textContent()).toMatch(/Storefront checks, last 24 hours/);
    expect(e.pageErrors).toEqual([]);
    await e.screenshot('storefront-card');
  }, 90_000);
});
