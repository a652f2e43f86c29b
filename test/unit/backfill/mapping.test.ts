import { mapWebhook } from '../../../src/mapping';
import { importSourceId, legacyId, mapImportedCustomer, mapImportedOrder, restCustomer } from '../../../src/mapping/imports';
import { graphqlCustomer, graphqlOrder } from '../../../sandbox/fake-shop/bulk';
import { sampleOrder } from '../../../sandbox/samples';
import { DEFAULT_SETTINGS, mergeSettings } from '../../../src/settings/settings';

const SHOP = 'demo-store.myshopify.com';
const NOW = new Date('2026-11-21T12:00:00.000Z');
const ctx = { shopDomain: SHOP, settings: DEFAULT_SETTINGS, now: NOW };

function message(r: ReturnType<typeof mapImportedOrder>) {
  if (!('message' in r)) throw new Error(`skipped: ${r.skipped}`);
  return r.message;
}

describe('imported orders', () => {
  it.each([4, 7, 12])('carry the same event_attribute and contact as order_placed for the same order (#%i), plus historical', (n) => {
    const rest = JSON.parse(JSON.stringify(sampleOrder(n)));
    const live = mapWebhook({
      topic: 'orders/create',
      payload: rest,
      webhookId: 'wh-1',
      shopDomain: SHOP,
      receivedAt: NOW,
      settings: DEFAULT_SETTINGS,
    });
    const placed = live.messages.find((m) => m.eventName === 'order_placed')!;
    const { order, lineItems } = graphqlOrder(n);
    const imported = message(mapImportedOrder(order, lineItems, ctx));

    const sourceId = importSourceId('order', String(rest.id));
    expect(imported.body.event_attribute).toEqual({ ...placed.body.event_attribute, source_id: sourceId, historical: true });
    const { event_attribute: _a, event_name: _n, ...liveContact } = placed.body;
    const { event_attribute: _b, event_name: name, ...importedContact } = imported.body;
    expect(importedContact).toEqual(liveContact);
    expect(name).toBe('order_imported');
    expect(imported).toMatchObject({
      sourceId,
      eventName: 'order_imported',
      topic: 'import/orders',
      email: placed.email,
      customerId: placed.customerId,
      orderId: String(rest.id),
      runAt: NOW,
    });
  });

  it('uses the configured event name', () => {
    const settings = mergeSettings(DEFAULT_SETTINGS, { import_event_names: { order_imported: 'past_order' } });
    const { order, lineItems } = graphqlOrder(3);
    const m = message(mapImportedOrder(order, lineItems, { ...ctx, settings }));
    expect(m.eventName).toBe('past_order');
    expect(m.body.event_name).toBe('past_order');
  });

  it('skips an order without any email', () => {
    const { order, lineItems } = graphqlOrder(3);
    const r = mapImportedOrder({ ...order, email: null, customer: null }, lineItems, ctx);
    expect(r).toEqual({ skipped: 'no email on the order' });
  });

  it('takes the order number from the name when Shopify gives no number', () => {
    const { order } = graphqlOrder(5);
    const m = message(mapImportedOrder({ ...order, name: 'EU1005-B' }, [], ctx));
    expect(m.body.event_attribute).toMatchObject({ order_number: 1005, order_name: 'EU1005-B', item_count: 0, line_items: [] });
  });
});

describe('imported customers', () => {
  it('carry the contact properties, orders count and amount spent', () => {
    const m = message(mapImportedCustomer(graphqlCustomer(10), ctx));
    expect(m).toMatchObject({
      sourceId: 'import:customer:7000000000010',
      eventName: 'customer_imported',
      topic: 'import/customers',
      customerId: '7000000000010',
      email: 'ava.khan.10@example.com',
    });
    expect(m.body).toEqual({
      event_name: 'customer_imported',
      email: 'ava.khan.10@example.com',
      first_name: 'Ava',
      last_name: 'Khan',
      shopify_customer_id: '7000000000010',
      email_marketing_state: 'subscribed',
      accepts_marketing: true,
      tags: ['newsletter', 'vip'],
      city: 'Paris',
      country_code: 'FR',
      orders_count: 3,
      total_spent: 112.5,
      currency: 'USD',
      // the last order the Admin API names, and the customer's language
      first_order_at: '2026-01-01T00:10:00.000Z',
      last_order_at: '2026-01-01T00:10:00.000Z',
      locale: 'en',
      event_attribute: {
        shop_domain: SHOP,
        source_id: 'import:customer:7000000000010',
        occurred_at: '2026-01-01T00:10:00.000Z',
        customer_id: '7000000000010',
        orders_count: 3,
        total_spent: 112.5,
        currency: 'USD',
        historical: true,
      },
    });
  });

  it('respects the merchant’s property selection', () => {
    const settings = mergeSettings(DEFAULT_SETTINGS, { contact_properties: { phone: false, tags: false } });
    const m = message(mapImportedCustomer(graphqlCustomer(12), { ...ctx, settings }));
    expect(m.body).not.toHaveProperty('phone');
    expect(m.body).not.toHaveProperty('tags');
    expect(m.body.first_name).toBe('Mia');
  });

  it('skips a phone-only customer, with the reason', () => {
    const r = mapImportedCustomer(graphqlCustomer(9, { phoneOnly: true }), ctx);
    expect(r).toMatchObject({ skipped: 'no email on the customer' });
    // what the import learned of the customer is kept all the same
    expect(r.profile).toMatchObject({ customerId: '7000000000009', phone: { value: '+15552000009' } });
  });

  it('reads the older fields (email, phone, emailMarketingConsent) too', () => {
    const c = restCustomer({
      id: 'gid://shopify/Customer/42',
      email: 'Old@Example.com ',
      phone: '+15550001',
      emailMarketingConsent: {
        marketingState: 'UNSUBSCRIBED',
        marketingOptInLevel: 'SINGLE_OPT_IN',
        consentUpdatedAt: '2025-01-01T00:00:00Z',
      },
    });
    expect(c).toMatchObject({
      id: '42',
      email: 'Old@Example.com',
      phone: '+15550001',
      email_marketing_consent: { state: 'unsubscribed', opt_in_level: 'single_opt_in' },
    });
    const m = message(
      mapImportedCustomer(
        { id: 'gid://shopify/Customer/42', email: 'Old@Example.com ', emailMarketingConsent: { marketingState: 'UNSUBSCRIBED' } },
        ctx,
      ),
    );
    expect(m.email).toBe('old@example.com');
    expect(m.body).toMatchObject({ email_marketing_state: 'unsubscribed', accepts_marketing: false });
  });

  it('turns gids into the numeric ids live webhooks use', () => {
    expect(legacyId('gid://shopify/Customer/9007199254740993')).toBe('9007199254740993');
    expect(legacyId('gid://shopify/LineItem/12?foo=bar')).toBe('12');
    expect(legacyId(17)).toBe('17');
    expect(legacyId(null)).toBeNull();
  });
});
