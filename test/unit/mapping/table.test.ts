import {
  buildTestEvent,
  EVENT_TABLE,
  lookupKeys,
  mapWebhook,
  PRODUCT_ALERT_EVENT_TABLE,
  STOREFRONT_EVENT_TABLE,
} from '../../../src/mapping';
import { EVENT_NAMES } from '../../../src/settings/settings';
import { fixture, input, RECEIVED_AT, SHOP } from './helpers';

describe('EVENT_TABLE', () => {
  it('names every configurable event at least once', () => {
    const covered = new Set(
      [...Object.values(EVENT_TABLE), ...Object.values(STOREFRONT_EVENT_TABLE), ...Object.values(PRODUCT_ALERT_EVENT_TABLE)].flat(),
    );
    expect(EVENT_NAMES.filter((n) => !covered.has(n))).toEqual([]);
  });
});

describe.each([
  ['app/uninstalled', 'app-uninstalled'],
  ['customers/redact', 'customers-redact'],
  ['customers/data_request', 'customers-data-request'],
  ['shop/redact', 'shop-redact'],
  ['orders/updated', 'orders-paid'],
])('%s', (topic, name) => {
  it('is not forwarded as an event (the intake handles it)', () => {
    expect(mapWebhook(input(topic, fixture(name)))).toEqual({
      ignored: 'topic not forwarded',
      messages: [],
      upserts: [],
      customerId: null,
    });
  });
});

describe('compliance fixtures', () => {
  it('keep their large ids exact through the parser', () => {
    expect(fixture('customers-redact')).toMatchObject({
      customer: { id: '9007199254740993' },
      orders_to_redact: ['820982911946154508', '820982911946154509'],
    });
    expect(fixture('customers-data-request')).toMatchObject({ data_request: { id: 9999 }, orders_requested: ['820982911946154508'] });
    expect(fixture('shop-redact')).toEqual({ shop_id: 70318112938, shop_domain: SHOP });
  });
});

describe('a payload of the wrong shape', () => {
  it.each([
    ['orders/create'],
    ['refunds/create'],
    ['checkouts/update'],
    ['customers/update'],
    ['fulfillments/update'],
    ['fulfillment_events/create'],
  ])('%s is ignored, not thrown', (topic) => {
    expect(mapWebhook(input(topic, [1, 2])).ignored).toMatch(/^payload is not a/);
  });
});

describe('buildTestEvent', () => {
  it('builds a connector_test message due now', () => {
    const m = buildTestEvent({ shopDomain: SHOP, email: 'owner@example.com', sourceId: 'test:1', now: RECEIVED_AT });
    expect(m).toEqual({
      sourceId: 'test:1',
      eventName: 'connector_test',
      topic: 'connector/test',
      email: 'owner@example.com',
      customerId: null,
      checkoutToken: null,
      runAt: RECEIVED_AT,
      body: {
        event_name: 'connector_test',
        email: 'owner@example.com',
        event_attribute: {
          shop_domain: SHOP,
          source_id: 'test:1',
          occurred_at: '2026-11-04T19:32:10.000Z',
          message: 'A test event from the Shopify connector',
        },
      },
    });
  });
});

describe('lookupKeys', () => {
  it('names the customer of customers/* and the order of refunds/create, exactly', () => {
    expect(lookupKeys('customers/update', fixture('customers-update'))).toEqual({
      customerId: '9007199254740993',
      orderId: null,
      fulfillmentId: null,
    });
    expect(lookupKeys('REFUNDS_CREATE', fixture('refunds-create'))).toEqual({
      customerId: null,
      orderId: '820982911946154508',
      fulfillmentId: null,
    });
    // an order names its customer, whose profile its events carry
    expect(lookupKeys('orders/create', fixture('orders-create'))).toEqual({
      customerId: '9007199254740993',
      orderId: null,
      fulfillmentId: null,
    });
  });
});
