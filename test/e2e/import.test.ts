// The historical-import card in the browser: offered after connecting, a progress bar while it
// runs, and every imported event delivered once.
import { enableBulkOperations, type FakeBulk } from '../../sandbox/fake-shop/bulk';
import { describeWithChromium, openAdminPage, startE2E, type E2E } from './helpers';

describeWithChromium('historical import card', () => {
  let e: E2E;
  let bulk: FakeBulk | undefined;
  beforeAll(async () => {
    e = await startE2E();
  }, 60_000);
  afterAll(async () => {
    await bulk?.close();
    await e?.close();
  });

  it('offers the import after connecting, shows progress, and imports every customer and order once', async () => {
    bulk = await enableBulkOperations(e.stack.shop, { customers: 40, orders: 30, completeAfterMs: 200 });
    const ws = await e.stack.connectShop(undefined, { rateLimit: 20 });
    await openAdminPage(e);
    const card = e.page.locator('#import-card');
    await card.getByRole('button', { name: 'Start import' }).waitFor();
    await card.getByLabel('Since').selectOption('all');
    await card.getByRole('button', { name: 'Start import' }).click();
    await card.getByRole('progressbar', { name: 'Import progress' }).waitFor({ timeout: 15_000 });
    await e.screenshot('20-import-running');
    const imported = await e.stack.until(
      () => {
        const events = e.stack.emulator.events({ workspaceId: ws.workspaceId }).filter((ev) => ev.event_name.endsWith('_imported'));
        return events.length >= 70 ? events : null;
      },
      30_000,
      '70 imported events',
    );
    await card.getByText(/Last import finished/).waitFor({ timeout: 20_000 });
    expect(new Set(imported.map((ev) => ev.event_attribute.source_id)).size).toBe(imported.length);
    expect(imported.filter((ev) => ev.event_name === 'order_imported').every((ev) => ev.event_attribute.historical === true)).toBe(true);
  }, 90_000);
});
