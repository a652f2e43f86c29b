// Huge payloads make bounded event bodies: line_items is cut to MAX_LINE_ITEMS with
// line_items_truncated: true, item_count stays exact, and the other lists are capped too.
import { mapWebhook, parseWebhookBody, type MapOutput } from '../../../src/mapping';
import { lineItemIds, MAX_LINE_ITEMS, MAX_LIST_ENTRIES } from '../../../src/mapping/items';
import { bigOrderBody, totalQuantity } from '../../helpers/big-order';
import { fixture, input, settingsWith } from './helpers';

const LINES = 10_000;
const attributesOf = (out: MapOutput, event: string) =>
  out.messages.concat(out.upserts).find((m) => m.eventName === event)!.body.event_attribute;
const bodySize = (out: MapOutput, event: string) =>
  Buffer.byteLength(JSON.stringify(out.messages.concat(out.upserts).find((m) => m.eventName === event)!.body));

describe('an order with 10,000 line items', () => {
  const raw = bigOrderBody(LINES);
  const payload = parseWebhookBody(raw);

  it('is about 1.8 MB, as the order of the report was', () => {
    expect(raw.length).toBeGreaterThan(1_700_000);
  });

  it('sends order_placed with the first 100 line items, line_items_truncated and the exact item_count, in a small body', () => {
    const out = mapWebhook(input('orders/create', payload));
    const a = attributesOf(out, 'order_placed');
    expect(MAX_LINE_ITEMS).toBe(100);
    expect(a.line_items).toHaveLength(MAX_LINE_ITEMS);
    expect((a.line_items as Array<{ sku: string }>).map((li) => li.sku)).toEqual(
      Array.from({ length: MAX_LINE_ITEMS }, (_, i) => `NB-A5-${i}`),
    );
    expect(a.line_items_truncated).toBe(true);
    expect(a.item_count).toBe(totalQuantity(LINES));
    // 2 MB before the cap; 100 items of about 250 bytes each now
    expect(bodySize(out, 'order_placed')).toBeLessThan(40_000);
  });

  it('stores an order summary with the first 100 line items, so shipping events stay small', () => {
    const out = mapWebhook(input('orders/create', payload));
    expect(out.orderSummary?.lineItems).toHaveLength(MAX_LINE_ITEMS);
    expect(out.orderSummary?.lineItemsTruncated).toBe(true);
  });

  it('makes at most 100 product_ordered events, none carrying the list', () => {
    const out = mapWebhook(input('orders/create', payload, { settings: settingsWith({ events: { product_ordered: true } }) }));
    const perItem = out.messages.filter((m) => m.eventName === 'product_ordered');
    expect(perItem).toHaveLength(MAX_LINE_ITEMS);
    expect(perItem[0]!.body.event_attribute).not.toHaveProperty('line_items');
    expect(perItem[0]!.body.event_attribute).not.toHaveProperty('line_items_truncated');
    expect(perItem[0]!.body.event_attribute.item_count).toBe(totalQuantity(LINES));
  });

  it('asks the product lookup for the items shown only', () => {
    expect(lineItemIds((payload as { line_items: unknown }).line_items)).toHaveLength(MAX_LINE_ITEMS);
  });

  it('order_paid is cut the same way', () => {
    const a = attributesOf(mapWebhook(input('orders/paid', payload)), 'order_paid');
    expect(a).toMatchObject({ line_items_truncated: true, item_count: totalQuantity(LINES) });
    expect(a.line_items).toHaveLength(MAX_LINE_ITEMS);
  });
});

describe('lists within the caps are sent as they always were', () => {
  it('an ordinary order carries no truncation flag', () => {
    const a = attributesOf(mapWebhook(input('orders/create', fixture('orders-create'))), 'order_placed');
    expect(a).not.toHaveProperty('line_items_truncated');
    expect(a).not.toHaveProperty('discount_codes_truncated');
    expect(a.line_items).toHaveLength(3);
  });

  it('exactly 100 line items are all sent, without the flag', () => {
    const a = attributesOf(mapWebhook(input('orders/create', parseWebhookBody(bigOrderBody(MAX_LINE_ITEMS)))), 'order_placed');
    expect(a.line_items).toHaveLength(MAX_LINE_ITEMS);
    expect(a).not.toHaveProperty('line_items_truncated');
    expect(a.item_count).toBe(totalQuantity(MAX_LINE_ITEMS));
  });
});

describe('the other unbounded lists', () => {
  it('discount_codes is cut to 50 with discount_codes_truncated', () => {
    const order = {
      ...fixture('orders-create'),
      discount_codes: Array.from({ length: 500 }, (_, i) => ({ code: `CODE${i}`, amount: '1.00', type: 'fixed_amount' })),
    };
    const a = attributesOf(mapWebhook(input('orders/create', order)), 'order_placed');
    expect(MAX_LIST_ENTRIES).toBe(50);
    expect(a.discount_codes).toEqual(Array.from({ length: MAX_LIST_ENTRIES }, (_, i) => `CODE${i}`));
    expect(a.discount_codes_truncated).toBe(true);
  });

  it('order_fulfilled cuts tracking numbers and URLs', () => {
    const numbers = Array.from({ length: 300 }, (_, i) => `1Z${String(i).padStart(16, '0')}`);
    const order = {
      ...fixture('orders-fulfilled'),
      fulfillments: [
        { id: 1, status: 'success', tracking_numbers: numbers, tracking_urls: numbers.map((n) => `https://ups.example/${n}`) },
      ],
    };
    const a = attributesOf(mapWebhook(input('orders/fulfilled', order)), 'order_fulfilled');
    expect(a.tracking_numbers).toEqual(numbers.slice(0, MAX_LIST_ENTRIES));
    expect(a).toMatchObject({ tracking_numbers_truncated: true, tracking_urls_truncated: true });
    expect(a.tracking_urls).toHaveLength(MAX_LIST_ENTRIES);
  });

  it('a fulfillment of 10,000 items sends order_shipped with 100 of them, flagged', () => {
    const order = parseWebhookBody(bigOrderBody(LINES)) as { line_items: unknown[] };
    const f = { ...fixture('fulfillments-create'), line_items: order.line_items };
    const out = mapWebhook(input('fulfillments/create', f, { order: null }));
    const a = attributesOf(out, 'order_shipped');
    expect(a.line_items).toHaveLength(MAX_LINE_ITEMS);
    expect(a.line_items_truncated).toBe(true);
    expect(out.fulfillmentState?.lineItems).toHaveLength(MAX_LINE_ITEMS);
  });

  it('a shipping event that takes its items from a huge stored order says they were cut', () => {
    const summary = mapWebhook(input('orders/create', parseWebhookBody(bigOrderBody(LINES)))).orderSummary!;
    const out = mapWebhook(
      input('fulfillment_events/create', fixture('fulfillment-events-create-delivered'), { order: summary, fulfillment: null }),
    );
    const a = attributesOf(out, 'shipment_delivered');
    expect(a.line_items).toHaveLength(MAX_LINE_ITEMS);
    expect(a.line_items_truncated).toBe(true);
  });

  it('a checkout with 10,000 items is cut the same way', () => {
    const order = parseWebhookBody(bigOrderBody(LINES)) as { line_items: unknown[] };
    const checkout = { ...fixture('checkouts-create'), line_items: order.line_items };
    const out = mapWebhook(input('checkouts/create', checkout));
    for (const event of ['checkout_started', 'checkout_abandoned']) {
      const a = attributesOf(out, event);
      expect(a.line_items).toHaveLength(MAX_LINE_ITEMS);
      expect(a).toMatchObject({ line_items_truncated: true, item_count: totalQuantity(LINES) });
      expect(bodySize(out, event)).toBeLessThan(40_000);
    }
  });
});
