// The admin page explains deliveries held because the email service's address answers 404: a
// problem of the app's configuration, not of the merchant's key, with what happens next.
import { sampleOrder } from '../../sandbox/samples';
import { DEFAULT_SHOP } from '../helpers/stack';
import { describeWithChromium, openAdminPage, startE2E, waitForText, type E2E } from './helpers';

const SLOW = 90_000;

describeWithChromium('the admin page and a service address that answers 404', () => {
  let e: E2E;

  beforeAll(async () => {
    e = await startE2E();
  }, SLOW);
  afterAll(async () => {
    await e?.close();
  });

  it(
    'shows no problem banner while deliveries flow, and one saying what to do while they are held for a 404',
    async () => {
      const { shopId } = await e.stack.connectShop(DEFAULT_SHOP);
      await e.stack.webhook('orders/create', sampleOrder(4_040), { webhookId: 'e2e-404-0' });
      await openAdminPage(e);
      await waitForText(e.page.locator('#connection-status'), /Connected/);
      expect(await e.page.locator('#delivery-problem').count()).toBe(0);

      // the state the worker leaves after three 404s (the flow itself: test/integration/service-answers.test.ts)
      await e.stack.app.db.outboxMessage.updateMany({
        where: { shopId, sourceId: 'e2e-404-0' },
        data: { status: 'held', heldReason: 'service_not_found' },
      });
      await e.page.reload({ waitUntil: 'domcontentloaded' });
      await e.page.waitForSelector('body[data-ready="true"]');
      const text = await waitForText(e.page.locator('#delivery-problem'), /404 Not Found/);
      expect(text).toMatch(/not of your API key/);
      expect(text).toMatch(/SERVICE_WEBHOOK_URL/);
      expect(text).toMatch(/resume on their own/);
      expect(await e.page.getAttribute('#delivery-problem', 'role')).toBe('alert');
      // the key itself is fine: no "refused key" banner, the status stays connected
      expect(await e.page.locator('#connection-status').textContent()).toMatch(/Connected/);
      // the delivery log says why the message waits
      await waitForText(e.page.locator('#delivery-log tr[data-status="held"]'), /address answers 404/);
      await e.screenshot('delivery-problem-404');
    },
    SLOW,
  );
});
