import { mapWebhook, orderSummaryOf } from '../../../src/mapping';
import { fixture, input, RECEIVED_AT, settingsWith, SHOP, TOKEN, WEBHOOK_ID } from './helpers';

// no product lookup here: the Admin API fields of each line item stay null (see product-images tests)
const NO_PRODUCT = { image_url: null, product_url: null, product_handle: null };

const STATUS_URL = `https://${SHOP}/70318112938/orders/5c1e0b7dd0a84f3a9c6f2e1b4d8a7c90/authenticate?key=2f6a4b8c1d3e5f7091a2b3c4d5e6f708`;
const LINE_ITEMS = [
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
  {
    ...NO_PRODUCT,
    product_id: '921728736',
    variant_id: '457924702',
    title: 'Waxed Canvas Tote',
    variant_title: null,
    sku: null,
    quantity: 1,
    price: 89.5,
  },
];
const JANE = {
  first_name: 'Jane',
  last_name: 'Okafor',
  phone: '+15035550187',
  shopify_customer_id: '9007199254740993',
  email_marketing_state: 'subscribed',
  accepts_marketing: true,
  tags: ['VIP', 'newsletter'],
  city: 'Portland',
  country_code: 'US',
  // the order's own facts about its customer: this order, the buyer's locale, and what the older
  // API version's embedded customer still carries
  first_order_at: '2026-11-04T19:32:07.000Z',
  last_order_at: '2026-11-04T19:32:07.000Z',
  locale: 'en-US',
  sms_marketing_state: 'not_subscribed',
  province_code: 'OR',
};
const ORDER_1042 = {
  order_id: '820982911946154508',
  order_name: '#1042',
  order_number: 1042,
  total_price: 185.38,
  subtotal_price: 164.24,
  total_tax: 13.14,
  total_discounts: 18.25,
  currency: 'USD',
  discount_codes: ['WELCOME10'],
  item_count: 4,
  line_items: LINE_ITEMS,
  order_status_url: STATUS_URL,
  shipping_city: 'Portland',
  shipping_country_code: 'US',
};

describe('orders/create', () => {
  const order = fixture('orders-create');

  it('sends order_placed with the exact body of the contract', () => {
    const out = mapWebhook(input('orders/create', order));
    expect(out.ignored).toBeUndefined();
    expect(out.upserts).toEqual([]);
    expect(out.messages).toHaveLength(1);
    const [m] = out.messages;
    expect(m).toEqual({
      sourceId: WEBHOOK_ID,
      eventName: 'order_placed',
      topic: 'orders/create',
      email: 'jane.okafor@example.com',
      customerId: '9007199254740993',
      checkoutToken: TOKEN,
      orderId: '820982911946154508',
      runAt: RECEIVED_AT,
      body: {
        event_name: 'order_placed',
        email: 'jane.okafor@example.com',
        ...JANE,
        event_attribute: { shop_domain: SHOP, source_id: WEBHOOK_ID, occurred_at: '2026-11-04T19:32:07.000Z', ...ORDER_1042 },
      },
    });
    expect(out.customerId).toBe('9007199254740993');
  });

  it('cancels the abandoned checkout with the same token or email', () => {
    expect(mapWebhook(input('orders/create', order)).cancelAbandoned).toEqual({ checkoutToken: TOKEN, email: 'jane.okafor@example.com' });
  });

  it('accepts the library topic spelling ORDERS_CREATE', () => {
    expect(mapWebhook(input('ORDERS_CREATE', order)).messages[0]?.topic).toBe('orders/create');
  });

  it('sends no product_ordered by default', () => {
    expect(mapWebhook(input('orders/create', order)).messages.map((m) => m.eventName)).toEqual(['order_placed']);
  });

  it('sends one product_ordered per line item when enabled, with the order fields and that item', () => {
    const out = mapWebhook(input('orders/create', order, { settings: settingsWith({ events: { product_ordered: true } }) }));
    const items = out.messages.filter((m) => m.eventName === 'product_ordered');
    expect(items.map((m) => m.sourceId)).toEqual([
      `${WEBHOOK_ID}:product_ordered:866550311766439020`,
      `${WEBHOOK_ID}:product_ordered:141249953214522974`,
      `${WEBHOOK_ID}:product_ordered:703073504`,
    ]);
    const { line_items: _omit, ...orderOnly } = ORDER_1042;
    expect(items[0]?.body.event_attribute).toEqual({
      shop_domain: SHOP,
      source_id: `${WEBHOOK_ID}:product_ordered:866550311766439020`,
      occurred_at: '2026-11-04T19:32:07.000Z',
      ...orderOnly,
      line_item_id: '866550311766439020',
      ...LINE_ITEMS[0],
    });
    expect(items[0]?.body.event_attribute).not.toHaveProperty('line_items');
  });

  it('records a turned-off order_placed as ignored, and still cancels the abandonment', () => {
    const out = mapWebhook(input('orders/create', order, { settings: settingsWith({ events: { order_placed: false } }) }));
    expect(out.messages).toEqual([]);
    expect(out.ignored).toBe('events order_placed and product_ordered are turned off');
    expect(out.cancelAbandoned).toEqual({ checkoutToken: TOKEN, email: 'jane.okafor@example.com' });
  });

  it('takes the email from the customer, then contact_email, when the order has none', () => {
    expect(mapWebhook(input('orders/create', { ...order, email: '' })).messages[0]?.email).toBe('jane.okafor@example.com');
    const guest = { ...order, email: null, customer: null, contact_email: 'guest@example.net' };
    const m = mapWebhook(input('orders/create', guest)).messages[0];
    expect(m?.email).toBe('guest@example.net');
    expect(m?.body).not.toHaveProperty('shopify_customer_id');
    expect(m?.body.first_name).toBe('Jane'); // from the billing address
  });

  it('records an order without any email as skipped (shown in the delivery log, never sent), with that reason', () => {
    const out = mapWebhook(
      input('orders/create', { ...order, email: null, contact_email: null, customer: { ...(order.customer as object), email: null } }),
    );
    expect(out).toMatchObject({ ignored: 'no email on the order', customerId: '9007199254740993' });
    expect(out.messages.map((m) => [m.eventName, m.email, m.skip])).toEqual([
      ['order_placed', null, { kind: 'no_email', reason: 'no email on the order' }],
    ]);
    expect(out.cancelAbandoned).toEqual({ checkoutToken: TOKEN, email: null });
  });

  it('sends only the contact properties the merchant selected', () => {
    const settings = settingsWith({ contact_properties: { phone: false, tags: false, accepts_marketing: false } });
    const body = mapWebhook(input('orders/create', order, { settings })).messages[0]?.body ?? {};
    expect(Object.keys(body).sort()).toEqual(
      [
        'city',
        'country_code',
        'email',
        'email_marketing_state',
        'event_attribute',
        'event_name',
        'first_name',
        'last_name',
        'shopify_customer_id',
        'first_order_at',
        'last_order_at',
        'locale',
        'sms_marketing_state',
        'province_code',
      ].sort(),
    );
  });

  it("does not put the account's properties on another email's contact", () => {
    const body = mapWebhook(input('orders/create', { ...order, email: 'gift.buyer@example.com' })).messages[0]?.body;
    expect(body?.email).toBe('gift.buyer@example.com');
    expect(body).not.toHaveProperty('shopify_customer_id');
    expect(body).not.toHaveProperty('email_marketing_state');
  });
});

describe('orders/paid', () => {
  it('sends order_paid dated by the update that marked it paid', () => {
    const out = mapWebhook(input('orders/paid', fixture('orders-paid')));
    expect(out.messages).toHaveLength(1);
    expect(out.messages[0]?.eventName).toBe('order_paid');
    expect(out.messages[0]?.body.event_attribute).toEqual({
      shop_domain: SHOP,
      source_id: WEBHOOK_ID,
      occurred_at: '2026-11-04T19:32:31.000Z',
      ...ORDER_1042,
    });
    expect(out.cancelAbandoned).toBeUndefined();
  });

  it('records a turned-off order_paid as ignored, naming it', () => {
    const out = mapWebhook(input('orders/paid', fixture('orders-paid'), { settings: settingsWith({ events: { order_paid: false } }) }));
    expect(out).toEqual({
      ignored: 'event order_paid is turned off',
      messages: [],
      upserts: [],
      customerId: '9007199254740993',
      orderSummary: orderSummaryOf(fixture('orders-paid')),
      // the customer's facts are kept even when the event is off
      profile: expect.objectContaining({ customerId: '9007199254740993', lastOrderAt: expect.any(String) }),
    });
  });
});

describe('orders/fulfilled', () => {
  it('sends the tracking numbers and urls of the live fulfillments, not the cancelled one', () => {
    const m = mapWebhook(input('orders/fulfilled', fixture('orders-fulfilled'))).messages[0];
    expect(m?.eventName).toBe('order_fulfilled');
    expect(m?.body.event_attribute).toMatchObject({
      order_id: '820982911946154508',
      occurred_at: '2026-11-06T15:05:41.000Z',
      tracking_numbers: ['1Z999AA10123456784', '9400111899223197428490'],
      tracking_urls: [
        'https://www.ups.com/track?loc=en_US&tracknum=1Z999AA10123456784',
        'https://tools.usps.com/go/TrackConfirmAction?tLabels=9400111899223197428490',
      ],
    });
  });

  it('sends empty tracking lists when a fulfillment has none', () => {
    const payload = { ...fixture('orders-fulfilled'), fulfillments: [] };
    expect(mapWebhook(input('orders/fulfilled', payload)).messages[0]?.body.event_attribute).toMatchObject({
      tracking_numbers: [],
      tracking_urls: [],
      occurred_at: '2026-11-06T15:05:44.000Z',
    });
  });
});

describe('orders/cancelled', () => {
  it('sends order_cancelled with the reason, for a customer with null consent', () => {
    const m = mapWebhook(input('orders/cancelled', fixture('orders-cancelled'))).messages[0];
    expect(m?.eventName).toBe('order_cancelled');
    expect(m?.email).toBe('marcus.lindqvist@example.org');
    expect(m?.body.event_attribute).toMatchObject({
      order_id: '820982911946154509',
      occurred_at: '2026-11-07T13:41:19.000Z',
      cancel_reason: 'customer',
      discount_codes: [],
      total_price: 60.92,
      shipping_city: 'Toronto',
      shipping_country_code: 'CA',
    });
    // Unknown consent is not sent: it must not blank the contact's state.
    expect(m?.body).not.toHaveProperty('email_marketing_state');
    expect(m?.body).not.toHaveProperty('accepts_marketing');
    expect(m?.body).not.toHaveProperty('phone');
    expect(m?.body).toMatchObject({ first_name: 'Marcus', city: 'Toronto', country_code: 'CA', tags: [] });
  });
});
