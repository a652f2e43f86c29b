import { mapWebhook } from '../../../src/mapping';
import { fixture, input, settingsWith, SHOP, TOKEN } from './helpers';

// no product lookup here: the Admin API fields of each line item stay null (see product-images tests)
const NO_PRODUCT = { image_url: null, product_url: null, product_handle: null };

const RECOVER_URL = `https://${SHOP}/70318112938/checkouts/ac/${TOKEN}/recover?key=0f1e2d3c4b5a69788796a5b4c3d2e1f0&locale=en-US`;
const CHECKOUT = {
  checkout_id: '981820079255243537',
  checkout_token: TOKEN,
  abandoned_checkout_url: RECOVER_URL,
  total_price: 92.99,
  subtotal_price: 92.99,
  currency: 'USD',
  item_count: 3,
  line_items: [
    {
      ...NO_PRODUCT,
      product_id: '788032119674292922',
      variant_id: '49148385',
      title: 'Merino Wool Beanie',
      variant_title: 'Charcoal',
      sku: 'NW-BEAN-CHR',
      quantity: 2,
      price: 34,
    },
    {
      ...NO_PRODUCT,
      product_id: '632910392',
      variant_id: '808950810',
      title: 'Trail Running Socks - 3 Pack',
      variant_title: 'M',
      sku: 'NW-SOCK-3PK-M',
      quantity: 1,
      price: 24.99,
    },
  ],
};

describe('checkouts/create', () => {
  const checkout = fixture('checkouts-create');

  it('sends checkout_started once per checkout, keyed on its token', () => {
    const out = mapWebhook(input('checkouts/create', checkout));
    expect(out.messages).toHaveLength(1);
    const [m] = out.messages;
    expect(m).toMatchObject({
      sourceId: `checkout:${TOKEN}:started`,
      eventName: 'checkout_started',
      checkoutToken: TOKEN,
      customerId: '9007199254740993',
    });
    expect(m?.body.event_attribute).toEqual({
      shop_domain: SHOP,
      source_id: `checkout:${TOKEN}:started`,
      occurred_at: '2026-11-04T19:10:02.000Z',
      ...CHECKOUT,
    });
  });

  it('queues checkout_abandoned for created_at + 60 minutes by default', () => {
    const out = mapWebhook(input('checkouts/create', checkout));
    expect(out.upserts).toHaveLength(1);
    const [u] = out.upserts;
    expect(u).toMatchObject({ sourceId: `checkout:${TOKEN}:abandoned`, eventName: 'checkout_abandoned', email: 'jane.okafor@example.com' });
    expect(u?.runAt.toISOString()).toBe('2026-11-04T20:10:02.000Z');
    expect(u?.body.event_attribute).toMatchObject({
      source_id: `checkout:${TOKEN}:abandoned`,
      occurred_at: '2026-11-04T20:10:02.000Z',
      abandoned_checkout_url: RECOVER_URL,
    });
  });

  it('follows a custom abandonment delay', () => {
    const receivedAt = new Date('2026-11-04T19:10:05.000Z');
    const out = mapWebhook(input('checkouts/create', checkout, { receivedAt, settings: settingsWith({ abandonment_delay_minutes: 15 }) }));
    expect(out.upserts[0]?.runAt.toISOString()).toBe('2026-11-04T19:25:02.000Z');
  });

  it('is ignored with a reason while the checkout has no email yet', () => {
    const out = mapWebhook(input('checkouts/create', { ...checkout, email: null, customer: null }));
    expect(out).toEqual({ ignored: 'no email on the checkout yet', messages: [], upserts: [], customerId: null });
  });

  it('leaves out a turned-off checkout_abandoned', () => {
    const out = mapWebhook(input('checkouts/create', checkout, { settings: settingsWith({ events: { checkout_abandoned: false } }) }));
    expect(out.upserts).toEqual([]);
    expect(out.messages.map((m) => m.eventName)).toEqual(['checkout_started']);
  });
});

describe('checkouts/update', () => {
  const checkout = fixture('checkouts-update');

  it('pushes checkout_abandoned back to updated_at + 60 minutes, with the fresh body', () => {
    const out = mapWebhook(input('checkouts/update', checkout));
    const [u] = out.upserts;
    expect(u?.runAt.toISOString()).toBe('2026-11-04T20:17:45.000Z');
    expect(u?.body).toMatchObject({ city: 'Portland', country_code: 'US', event_attribute: { total_price: 108.43 } });
    expect(out.cancelAbandoned).toBeUndefined();
  });

  it('repeats checkout_started under the same id, so a guest who typed the email late is still counted once', () => {
    expect(mapWebhook(input('checkouts/update', checkout)).messages.map((m) => m.sourceId)).toEqual([`checkout:${TOKEN}:started`]);
  });

  it('cancels the abandonment once the checkout is completed, and sends nothing', () => {
    const out = mapWebhook(input('checkouts/update', fixture('checkouts-update-completed')));
    expect(out).toEqual({
      ignored: 'checkout completed',
      messages: [],
      upserts: [],
      customerId: '9007199254740993',
      cancelAbandoned: { checkoutToken: TOKEN, email: 'jane.okafor@example.com' },
    });
  });
});

describe('when checkout_abandoned fires: the merchant’s delay, and the grace only for late checkouts', () => {
  const checkout = fixture('checkouts-create');
  // the fixture's last activity (created_at = updated_at)
  const ACTIVITY = Date.parse('2026-11-04T19:10:02.000Z');
  const policy = { graceMs: 10 * 60_000, maxAgeMs: 7 * 86_400_000 };
  const runAt = (receivedAfterMs: number, delayMinutes: number) =>
    mapWebhook(
      input('checkouts/create', checkout, {
        receivedAt: new Date(ACTIVITY + receivedAfterMs),
        settings: settingsWith({ abandonment_delay_minutes: delayMinutes }),
        abandonment: policy,
      }),
    ).upserts[0]!.runAt.getTime();

  it('a checkout that arrives at once fires at its 5-minute delay, not after the 10-minute grace', () => {
    expect(runAt(2_000, 5)).toBe(ACTIVITY + 5 * 60_000);
  });

  it('a checkout Shopify delivered 45 s after its activity still counts as prompt', () => {
    expect(runAt(45_000, 5)).toBe(ACTIVITY + 5 * 60_000);
  });

  it('a checkout that arrives late waits the grace after its arrival, so a late order can still cancel it', () => {
    const late = 20 * 60_000;
    expect(runAt(late, 5)).toBe(ACTIVITY + late + policy.graceMs);
    // its delay already passed on arrival: never at once
    expect(runAt(late, 15)).toBe(ACTIVITY + late + policy.graceMs);
  });

  it('a late checkout whose delay ends after the grace fires at its delay', () => {
    expect(runAt(3 * 60_000, 60)).toBe(ACTIVITY + 60 * 60_000);
  });
});
