// Real payloads' quirks (test/fixtures/quirks/README.md) through the mappers, and the rules that
// keep the service from ever receiving a request it must refuse.
import fc from 'fast-check';
import { mapWebhook } from '../../../src/mapping';
import { emailAddress } from '../../../src/mapping/email';
import { fixture, input, settingsWith } from './helpers';

const quirk = (name: string) => fixture(`quirks/${name}`);
// what the service emulator accepts (sandbox/service-emulator/api.ts): one @, a dotted domain
const EMULATOR_EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;

describe('ids beyond 2^53', () => {
  it('takes the exact id from admin_graphql_api_id when the plain id was already rounded', () => {
    const [m] = mapWebhook(input('orders/create', quirk('orders-create-rounded-ids'))).messages;
    expect(m?.body.event_attribute).toMatchObject({ order_id: '820982911946154508' });
    expect(m?.orderId).toBe('820982911946154508');
    expect(m?.customerId).toBe('9007199254740993');
    expect(m?.body.shopify_customer_id).toBe('9007199254740993');
  });

  it('keeps product and variant ids exact, and money given as JSON numbers', () => {
    const [m] = mapWebhook(input('orders/create', quirk('orders-create-rounded-ids'))).messages;
    expect(m?.body.event_attribute).toMatchObject({
      total_price: 59.5,
      subtotal_price: 49.5,
      total_tax: 10,
      line_items: [{ product_id: '788032119674292922', variant_id: '49148385', price: 49.5, quantity: 1 }],
    });
  });

  it('sums refund line subtotals given as JSON numbers exactly', () => {
    const out = mapWebhook(input('refunds/create', quirk('refunds-create-number-subtotals'), { orderEmail: 'jane.okafor@example.com' }));
    expect(out.messages[0]?.body.event_attribute).toMatchObject({ order_id: '820982911946154508', refund_amount: 34.3 });
  });
});

describe('the email of an order', () => {
  it('is the order email, else contact_email, else customer.email, trimmed and lower-cased', () => {
    expect(mapWebhook(input('orders/create', quirk('orders-create-rounded-ids'))).messages[0]?.email).toBe('rounded.ids@example.com');
    expect(mapWebhook(input('orders/create', quirk('orders-create-customer-email-only'))).messages[0]?.email).toBe(
      'only.customer@example.com',
    );
    const order = quirk('orders-create-rounded-ids');
    expect(mapWebhook(input('orders/create', { ...order, email: 'First@Example.com' })).messages[0]?.email).toBe('first@example.com');
  });

  it('records an order with no email anywhere as skipped, never to be sent', () => {
    const out = mapWebhook(input('orders/create', quirk('orders-create-no-email')));
    expect(out.ignored).toBe('no email on the order');
    expect(out.messages.map((m) => m.skip)).toEqual([{ kind: 'no_email', reason: 'no email on the order' }]);
  });

  it('passes over invalid candidates and, with none valid, skips with the first one shown escaped', () => {
    const out = mapWebhook(input('orders/create', quirk('orders-create-hostile-email')));
    const [m] = out.messages;
    expect(m?.skip?.kind).toBe('invalid_email');
    expect(m?.skip?.reason).toBe(
      '"x@example.com\\r\\nbcc: everyone@example.org" is not a valid email address; the service would refuse it',
    );
    expect(m?.email).toBeNull();
    const rescued = mapWebhook(input('orders/create', { ...quirk('orders-create-hostile-email'), contact_email: 'ok@example.com' }));
    expect(rescued.messages[0]).toMatchObject({ email: 'ok@example.com' });
    expect(rescued.messages[0]?.skip).toBeUndefined();
  });
});

describe("Shopify's test sends", () => {
  // every order topic carries the same canned body (cancelled_at set, financial_status voided):
  // the topic header decides the event, never the body
  it.each([
    ['orders/create', 'order_placed'],
    ['orders/paid', 'order_paid'],
    ['orders/fulfilled', 'order_fulfilled'],
    ['orders/cancelled', 'order_cancelled'],
  ])('%s of the canned order is %s', (topic, eventName) => {
    const out = mapWebhook(input(topic, quirk('orders-test-send')));
    expect(out.messages.map((m) => m.eventName)).toEqual([eventName]);
    expect(out.messages[0]?.body.event_attribute).toMatchObject({ order_id: '820982911946154508', total_price: 403 });
  });
});

describe('checkouts of newer API versions', () => {
  it('have no id: checkout_id falls back to the token', () => {
    const out = mapWebhook(input('checkouts/create', quirk('checkouts-create-no-id'), { receivedAt: new Date('2026-11-05T13:00:06Z') }));
    expect(out.messages[0]?.body.event_attribute).toMatchObject({
      checkout_id: 'c1a2b3d4e5f60718293a4b5c6d7e8f90',
      checkout_token: 'c1a2b3d4e5f60718293a4b5c6d7e8f90',
    });
    expect(out.upserts[0]?.sourceId).toBe('checkout:c1a2b3d4e5f60718293a4b5c6d7e8f90:abandoned');
  });
});

describe('abandonment of a checkout that reaches us late', () => {
  const checkout = quirk('checkouts-create-no-id'); // last active 2026-11-05T13:00:05Z
  const active = Date.parse('2026-11-05T13:00:05Z');

  it('fires after the delay counted from its activity when it arrives on time', () => {
    const [u] = mapWebhook(input('checkouts/create', checkout, { receivedAt: new Date(active + 5_000) })).upserts;
    expect(u?.runAt.toISOString()).toBe('2026-11-05T14:00:05.000Z');
  });

  it('fires no sooner than a grace period after arriving, whatever its updated_at says', () => {
    // three hours late (a Shopify retry after an outage): due at once by its updated_at
    const received = new Date(active + 3 * 3_600_000);
    const [u] = mapWebhook(input('checkouts/create', checkout, { receivedAt: received })).upserts;
    expect(u?.runAt.getTime()).toBe(received.getTime() + 10 * 60_000);
    expect(u?.body.event_attribute.occurred_at).toBe('2026-11-05T14:00:05.000Z');
    const custom = mapWebhook(
      input('checkouts/create', checkout, { receivedAt: received, abandonment: { graceMs: 30 * 60_000, maxAgeMs: 7 * 86_400_000 } }),
    ).upserts[0];
    expect(custom?.runAt.getTime()).toBe(received.getTime() + 30 * 60_000);
  });

  it('gets no abandonment at all past the maximum age, and says why', () => {
    const out = mapWebhook(input('checkouts/create', checkout, { receivedAt: new Date(active + 30 * 86_400_000) }));
    expect(out.messages.map((m) => [m.eventName, m.skip])).toEqual([['checkout_started', undefined]]);
    expect(out.upserts[0]?.skip).toEqual({
      kind: 'checkout_too_old',
      reason: 'the checkout was last active 30 days before it reached us (no abandonment after 7 days)',
    });
  });

  it('a prompt checkout follows the merchant delay, even one shorter than the grace', () => {
    const [u] = mapWebhook(
      input('checkouts/create', checkout, { receivedAt: new Date(active), settings: settingsWith({ abandonment_delay_minutes: 5 }) }),
    ).upserts;
    expect(u?.runAt.getTime()).toBe(active + 5 * 60_000);
  });

  it('a late checkout follows the merchant delay when it is the later of the two', () => {
    const [u] = mapWebhook(input('checkouts/create', checkout, { receivedAt: new Date(active + 3 * 60_000) })).upserts;
    expect(u?.runAt.getTime()).toBe(active + 60 * 60_000);
  });
});

describe('the email rule', () => {
  it.each(['a@b.co', 'first.last+tag@sub.example.org', "o'brien@example.ie", 'josé@example.com'])('accepts %s', (e) => {
    expect(emailAddress.safeParse(e).success).toBe(true);
  });
  it.each([
    '',
    'not-an-email',
    'a@b',
    'a@@b.co',
    'a b@c.co',
    'a@b.co\r\nBcc: x@y.z',
    'a\u0000@b.co',
    'a\u200b@b.co',
    `${'a'.repeat(250)}@b.co`,
    '@b.co',
    'a@.co',
    'a@b.',
  ])('refuses %j', (e) => {
    expect(emailAddress.safeParse(e).success).toBe(false);
  });

  // whatever string the email is, in any topic, what we would send passes the service's rule
  it('never produces a sendable message the service would refuse (fast-check)', () => {
    const topics: Array<[string, (email: string) => unknown]> = [
      ['orders/create', (email) => ({ ...quirk('orders-test-send'), email, contact_email: null, customer: null })],
      ['checkouts/create', (email) => ({ ...quirk('checkouts-create-no-id'), email, customer: null })],
      ['customers/create', (email) => ({ id: 42, email, created_at: '2026-11-05T00:00:00Z' })],
      ['refunds/create', (email) => ({ ...quirk('refunds-create-number-subtotals'), email })],
    ];
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.emailAddress(), fc.string({ unit: 'binary' }), fc.constantFrom(' a@b.co ', 'A@B.CO', 'a@b.co\n')),
        fc.integer({ min: 0, max: 3 }),
        (email, t) => {
          const [topic, payload] = topics[t]!;
          const out = mapWebhook(input(topic, payload(email), { receivedAt: new Date('2026-11-05T13:00:06Z') }));
          for (const m of [...out.messages, ...out.upserts].filter((x) => !x.skip)) {
            expect(m.body.email.length).toBeLessThanOrEqual(254);
            expect(EMULATOR_EMAIL.test(m.body.email)).toBe(true);
            expect(m.email).toBe(m.body.email);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});
