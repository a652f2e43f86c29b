// Storefront events while Shopify's Admin API is slow, throttled or failing (issue 43, part 0):
// a view or add to cart whose product Shopify has not described yet waits, and is described by a
// later lookup; nothing is dropped but what Shopify says it does not have.
import { randomUUID } from 'node:crypto';
import { TestClock } from '../helpers/clock';
import { testProvider } from '../helpers/db';
import { activatePixel, batch, ev, MUG, sendBatch, TOTE } from '../helpers/pixel';
import { startStack, type Stack } from '../helpers/stack';

const MIN = 60_000;

describe(`storefront events while Shopify is slow (${testProvider})`, () => {
  let s: Stack;
  const clock = new TestClock();
  let n = 0;
  let customerId = 43_000;
  beforeAll(async () => {
    s = await startStack({ server: { now: clock.now } });
  });
  afterAll(() => s.close());
  const events = (workspaceId: string, eventName?: string) => s.emulator.events({ workspaceId, eventName });

  async function shop(): Promise<{ domain: string; key: string; workspaceId: string; shopId: string }> {
    const domain = `slow-${++n}.myshopify.com`;
    const { workspaceId, shopId } = await s.connectShop(domain);
    const key = await activatePixel(s, domain);
    return { domain, key, workspaceId, shopId };
  }
  /** A logged-in shopper: a customer Shopify sent the app (customers/create vouches for the email). */
  const customer = async (domain: string, email: string) => {
    await s.webhook('customers/create', { ...s.fixture('customers-create'), id: ++customerId, email }, { domain });
    return email;
  };

  it('keeps the views of a logged-in shopper when the Admin API answers after the unit’s deadline, and sends each once it is described', async () => {
    const { domain, key, workspaceId, shopId } = await shop();
    const email = await customer(domain, 'slow.shopper@example.com');
    // every product lookup of this shop answers after 3 s
    const end = s.shop.degrade(domain, { only: /\bnodes\s*\(/, delayMs: 3000 });
    try {
      expect(await sendBatch(s, batch(key, randomUUID(), [ev.view(MUG), ev.view(TOTE)], { email }))).toBe(204);
      const sent = await s.app.db.outboxMessage.count({ where: { shopId, eventName: 'viewed_product' } });
      const kept = await s.app.db.pixelEvent.count({ where: { shopId } });
      // each view is either queued for the email service or kept to be described later: none is lost
      expect(sent + kept).toBe(2);
      expect(kept).toBe(2);
      // the lookup the unit stopped waiting for goes on, and caches what Shopify says
      await s.until(
        () => s.app.db.productInfo.count({ where: { shopId, productId: { in: [MUG.id, TOTE.id] } } }).then((n) => n === 2),
        10_000,
        'the late answer cached',
      );
      clock.advance(2 * MIN);
      expect(await s.app.retryStorefrontProducts()).toBe(1);
      await s.settle();
      const viewed = await s.until(
        () => (events(workspaceId, 'viewed_product').length >= 2 ? events(workspaceId, 'viewed_product') : null),
        5000,
        'the views',
      );
      expect(viewed.map((e) => [e.email, e.event_attribute.product_id]).sort()).toEqual([
        [email, MUG.id],
        [email, TOTE.id],
      ]);
      expect(await s.app.db.pixelEvent.count({ where: { shopId } })).toBe(0);
    } finally {
      end();
    }
  });
});
