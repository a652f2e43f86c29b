// The merchant's abandonment delay is honoured even when it is shorter than CHECKOUT_GRACE_MINUTES:
// the grace holds back only checkouts that reach us late.
import { sampleCheckout } from '../../sandbox/samples';
import { TestClock } from '../helpers/clock';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';

const DOMAIN = 'short-delay.myshopify.com';

describe(`a short abandonment delay (${testProvider})`, () => {
  let s: Stack;
  let workspaceId: string;
  const clock = new TestClock();
  beforeAll(async () => {
    // the grace as configured by default (10 min), longer than the merchant's 5-minute delay
    s = await startStack({ server: { now: clock.now }, env: { CHECKOUT_GRACE_MINUTES: '10' } });
    ({ workspaceId } = await s.connectShop(DOMAIN));
    const res = await s.api('PUT', '/api/settings', { abandonment_delay_minutes: 5 }, DOMAIN);
    expect(res.status).toBe(200);
  });
  afterAll(() => s.close());

  const send = (payload: unknown, id: string) =>
    s.shop.sendWebhook(s.app.url, { topic: 'checkouts/create', shopDomain: DOMAIN, payload, webhookId: id });
  const abandoned = (token: string) =>
    s.app.db.outboxMessage.findFirstOrThrow({ where: { checkoutToken: token, eventName: 'checkout_abandoned' } });
  const fired = () => s.emulator.events({ workspaceId, eventName: 'checkout_abandoned' });

  it('a checkout that arrives at once fires 5 minutes after its activity, not after the 10-minute grace', async () => {
    const checkout = sampleCheckout(501, { at: clock.now() });
    await send(checkout, 'short-1');
    await s.until(() => s.emulator.events({ workspaceId, eventName: 'checkout_started' }).length >= 1, 5000, 'checkout_started');
    const message = await abandoned(checkout.token);
    expect(message.runAt.getTime()).toBe(Date.parse(checkout.updated_at) + 5 * 60_000);

    clock.advance(4 * 60_000);
    s.app.worker.nudge();
    await new Promise((r) => setTimeout(r, 300));
    expect(fired()).toEqual([]);

    // a little past the 5 minutes, well before the 10-minute grace would end
    clock.advance(60_000 + 5_000);
    s.app.worker.nudge();
    await s.until(() => fired().length >= 1, 5000, 'checkout_abandoned after 5 minutes');
    expect(fired().map((e) => e.event_attribute.checkout_id)).toEqual([String(checkout.id)]);
  });

  it('a checkout that arrives 30 minutes late still waits the grace after its arrival', async () => {
    const checkout = sampleCheckout(502, { at: new Date(clock.now().getTime() - 30 * 60_000) });
    const before = clock.now().getTime();
    await send(checkout, 'short-late-1');
    await s.until(() => s.emulator.events({ workspaceId, eventName: 'checkout_started' }).length >= 2, 5000, 'checkout_started');
    const message = await abandoned(checkout.token);
    // its 5-minute delay ended 25 minutes before it arrived: it waits the 10-minute grace instead
    expect(message.runAt.getTime()).toBeGreaterThanOrEqual(before + 10 * 60_000);
    expect(message.runAt.getTime()).toBeLessThanOrEqual(clock.now().getTime() + 10 * 60_000);
    expect(message.status).toBe('queued');
  });
});
