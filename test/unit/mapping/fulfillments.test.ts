import {
  lookupKeys,
  mapWebhook,
  normalizeTopic,
  orderSummaryOf,
  type MapInput,
  type MapOutput,
  type StoredFulfillment,
  type StoredOrder,
} from '../../../src/mapping';
import { sampleFulfillment, sampleFulfillmentEvent, sampleOrder, SHIPMENT_SEQUENCE } from '../../../sandbox/samples';
import { EVENT_DEFAULTS } from '../../../src/settings/settings';
import { fixture, input, RECEIVED_AT, settingsWith, SHOP } from './helpers';

const FULFILLMENT_ID = '4783218399312003082';
const ORDER_ID = '820982911946154508';
const JANE = 'jane.okafor@example.com';
// no product lookup in these tests: the Admin API fields stay null
const NO_PRODUCT = { image_url: null, product_url: null, product_handle: null };
const BEANIE = {
  ...NO_PRODUCT,
  product_id: '788032119674292922',
  variant_id: '49148385',
  title: 'Merino Wool Beanie',
  variant_title: 'Charcoal',
  sku: 'NW-BEAN-CHR',
  quantity: 2,
  price: 34,
};
const SOCKS = {
  ...NO_PRODUCT,
  product_id: '632910392',
  variant_id: '808950810',
  title: 'Trail Running Socks - 3 Pack',
  variant_title: 'M',
  sku: 'NW-SOCK-3PK-M',
  quantity: 1,
  price: 24.99,
};
const TOTE = {
  ...NO_PRODUCT,
  product_id: '921728736',
  variant_id: '457924702',
  title: 'Waxed Canvas Tote',
  variant_title: null,
  sku: null,
  quantity: 1,
  price: 89.5,
};
const TRACKING = {
  tracking_company: 'UPS',
  tracking_numbers: ['1Z999AA10123456784'],
  tracking_urls: ['https://www.ups.com/track?loc=en_US&tracknum=1Z999AA10123456784'],
};
const sourceId = (event: string) => `fulfillment:${FULFILLMENT_ID}:${event}`;

/** The order as the intake stores it from orders/create. */
const STORED_ORDER: StoredOrder = {
  orderId: ORDER_ID,
  orderName: '#1042',
  orderNumber: 1042,
  email: JANE,
  customerId: '9007199254740993',
  currency: 'USD',
  lineItems: [BEANIE, SOCKS, TOTE],
};

/** What fulfillments/create leaves behind for this fulfillment. */
const SHIPPED: StoredFulfillment = {
  fulfillmentId: FULFILLMENT_ID,
  orderId: ORDER_ID,
  orderName: '#1042',
  trackingCompany: 'UPS',
  trackingNumbers: TRACKING.tracking_numbers,
  trackingUrls: TRACKING.tracking_urls,
  lineItems: [BEANIE, SOCKS],
  email: JANE,
  sent: ['order_shipped'],
};

const created = () => fixture('fulfillments-create');
const updated = () => fixture('fulfillments-update');
const event = (status: 'out-for-delivery' | 'delivered' | 'attempted-delivery' | 'failure') =>
  fixture(`fulfillment-events-create-${status}`);
const names = (out: MapOutput) => out.messages.map((m) => m.eventName);

type Step = [topic: string, payload: unknown];

/** Feeds webhooks one after another, each with the state the previous one returned (as stage 2 does). */
function play(steps: Step[], over: Partial<MapInput> = {}): MapOutput[] {
  let fulfillment: StoredFulfillment | null = over.fulfillment ?? null;
  return steps.map(([topic, payload], i) => {
    const out = mapWebhook(input(topic, payload, { order: null, ...over, fulfillment, webhookId: `wh-${i}` }));
    fulfillment = out.fulfillmentState ?? fulfillment;
    return out;
  });
}

describe('fulfillments/create', () => {
  it('sends order_shipped with the tracking links, the exact ids and the fulfilled items', () => {
    const out = mapWebhook(input('fulfillments/create', created()));
    expect(out.ignored).toBeUndefined();
    expect(out.upserts).toEqual([]);
    expect(out.messages).toEqual([
      {
        sourceId: sourceId('order_shipped'),
        eventName: 'order_shipped',
        topic: 'fulfillments/create',
        email: JANE,
        customerId: null,
        checkoutToken: null,
        orderId: ORDER_ID,
        runAt: RECEIVED_AT,
        body: {
          event_name: 'order_shipped',
          email: JANE,
          event_attribute: {
            shop_domain: SHOP,
            source_id: sourceId('order_shipped'),
            occurred_at: '2026-11-05T22:02:13.000Z',
            order_id: ORDER_ID,
            // no stored order: the name comes from the fulfillment's ("#1042.2")
            order_name: '#1042',
            fulfillment_id: FULFILLMENT_ID,
            ...TRACKING,
            shipment_status: null,
            line_items: [BEANIE, SOCKS],
          },
        },
      },
    ]);
    expect(out.fulfillmentState).toEqual(SHIPPED);
  });

  it('accepts the library topic spelling FULFILLMENTS_CREATE', () => {
    expect(mapWebhook(input('FULFILLMENTS_CREATE', created())).messages[0]).toMatchObject({
      topic: 'fulfillments/create',
      eventName: 'order_shipped',
    });
  });

  it('names the customer of the stored order, for the receipt and the message', () => {
    const out = mapWebhook(input('fulfillments/create', created(), { order: STORED_ORDER }));
    expect(out.customerId).toBe('9007199254740993');
    expect(out.messages[0]?.customerId).toBe('9007199254740993');
    expect(out.messages[0]?.body).not.toHaveProperty('first_name'); // no contact properties: they would be guesses
  });

  it('records a fulfillment without a tracking number as ignored, and keeps what it knows', () => {
    const payload = {
      ...created(),
      tracking_company: null,
      tracking_number: null,
      tracking_numbers: [],
      tracking_url: null,
      tracking_urls: [],
    };
    const out = mapWebhook(input('fulfillments/create', payload));
    expect(out).toMatchObject({ ignored: 'the fulfillment has no tracking number yet', messages: [] });
    expect(out.fulfillmentState).toEqual({ ...SHIPPED, trackingCompany: null, trackingNumbers: [], trackingUrls: [], sent: [] });
  });

  it('sends nothing for a cancelled fulfillment', () => {
    const out = mapWebhook(input('fulfillments/create', { ...created(), status: 'cancelled' }));
    expect(out).toMatchObject({ ignored: 'the fulfillment is cancelled or failed', messages: [] });
  });

  it('is ignored, not thrown, when the payload is not a fulfillment', () => {
    expect(mapWebhook(input('fulfillments/create', { order_id: 1 })).ignored).toBe('payload is not a fulfillment');
    expect(mapWebhook(input('fulfillment_events/create', { id: 1, status: 'delivered' })).ignored).toBe(
      'payload is not a fulfillment event',
    );
  });
});

describe('fulfillments/update', () => {
  it('sends order_shipped when an update first carries a tracking number', () => {
    const untracked: StoredFulfillment = { ...SHIPPED, trackingCompany: null, trackingNumbers: [], trackingUrls: [], sent: [] };
    const out = mapWebhook(input('fulfillments/update', { ...updated(), shipment_status: null }, { fulfillment: untracked }));
    expect(names(out)).toEqual(['order_shipped']);
    expect(out.messages[0]?.body.event_attribute).toMatchObject({
      occurred_at: '2026-11-07T13:14:52.000Z',
      ...TRACKING,
      shipment_status: null,
    });
    expect(out.fulfillmentState?.sent).toEqual(['order_shipped']);
  });

  it('treats a shipment_status as a status source, next to the shipped event already sent', () => {
    const out = mapWebhook(input('fulfillments/update', updated(), { fulfillment: SHIPPED, order: STORED_ORDER }));
    expect(names(out)).toEqual(['shipment_out_for_delivery']);
    expect(out.messages[0]).toMatchObject({ sourceId: sourceId('shipment_out_for_delivery'), topic: 'fulfillments/update', email: JANE });
    expect(out.messages[0]?.body.event_attribute).toEqual({
      shop_domain: SHOP,
      source_id: sourceId('shipment_out_for_delivery'),
      occurred_at: '2026-11-07T13:14:52.000Z',
      order_id: ORDER_ID,
      order_name: '#1042',
      fulfillment_id: FULFILLMENT_ID,
      ...TRACKING,
      shipment_status: 'out_for_delivery',
      line_items: [BEANIE, SOCKS],
    });
    expect(out.fulfillmentState?.sent).toEqual(['order_shipped', 'shipment_out_for_delivery']);
  });

  it('sends both order_shipped and the status when it is the first webhook of the fulfillment', () => {
    expect(names(mapWebhook(input('fulfillments/update', updated())))).toEqual(['order_shipped', 'shipment_out_for_delivery']);
  });

  it('sends nothing new when repeated', () => {
    const [first, again] = play([
      ['fulfillments/update', updated()],
      ['fulfillments/update', updated()],
    ]);
    expect(names(first!)).toEqual(['order_shipped', 'shipment_out_for_delivery']);
    expect(again).toMatchObject({ ignored: 'shipment_out_for_delivery already sent for this fulfillment', messages: [] });
    expect(again?.fulfillmentState).toEqual(first?.fulfillmentState);
  });
});

describe('fulfillment_events/create', () => {
  it.each([
    [
      'out-for-delivery',
      'shipment_out_for_delivery',
      'out_for_delivery',
      '2026-11-07T13:14:50.000Z',
      { estimated_delivery_at: '2026-11-08T01:00:00.000Z' },
    ],
    ['delivered', 'shipment_delivered', 'delivered', '2026-11-07T20:41:07.000Z', {}],
    [
      'attempted-delivery',
      'shipment_delivery_failed',
      'attempted_delivery',
      '2026-11-07T17:03:26.000Z',
      { estimated_delivery_at: '2026-11-10T01:00:00.000Z' },
    ],
    ['failure', 'shipment_delivery_failed', 'failure', '2026-11-12T15:20:00.000Z', {}],
  ] as const)('%s sends %s with the stored tracking and items', (name, eventName, status, occurredAt, estimate) => {
    const out = mapWebhook(input('fulfillment_events/create', event(name), { fulfillment: SHIPPED, order: STORED_ORDER }));
    expect(out.ignored).toBeUndefined();
    expect(out.messages).toHaveLength(1);
    expect(out.messages[0]).toMatchObject({
      sourceId: sourceId(eventName),
      eventName,
      topic: 'fulfillment_events/create',
      email: JANE,
      customerId: '9007199254740993',
      orderId: ORDER_ID,
      checkoutToken: null,
    });
    expect(out.messages[0]?.body).toEqual({
      event_name: eventName,
      email: JANE,
      event_attribute: {
        shop_domain: SHOP,
        source_id: sourceId(eventName),
        occurred_at: occurredAt,
        order_id: ORDER_ID,
        order_name: '#1042',
        fulfillment_id: FULFILLMENT_ID,
        ...TRACKING,
        shipment_status: status,
        ...estimate,
        line_items: [BEANIE, SOCKS],
      },
    });
    expect(out.fulfillmentState).toEqual({ ...SHIPPED, sent: ['order_shipped', eventName] });
  });

  it('accepts the library topic spelling FULFILLMENT_EVENTS_CREATE', () => {
    const out = mapWebhook(input('FULFILLMENT_EVENTS_CREATE', event('delivered'), { fulfillment: SHIPPED }));
    expect(out.messages[0]).toMatchObject({ topic: 'fulfillment_events/create', eventName: 'shipment_delivered' });
  });

  it('forwards no other status, and says which', () => {
    const out = mapWebhook(
      input('fulfillment_events/create', { ...event('out-for-delivery'), status: 'in_transit' }, { fulfillment: SHIPPED }),
    );
    expect(out).toMatchObject({ ignored: 'shipment status in_transit is not forwarded', messages: [] });
    expect(out.fulfillmentState).toEqual(SHIPPED);
  });

  it('reads an unknown status as unknown, whatever its name', () => {
    const out = mapWebhook(input('fulfillment_events/create', { ...event('delivered'), status: 'constructor' }, { fulfillment: SHIPPED }));
    expect(out).toMatchObject({ ignored: 'shipment status constructor is not forwarded', messages: [] });
  });

  it('keeps the ids exact through the parser', () => {
    expect(event('delivered')).toMatchObject({
      id: '9213687404391827463',
      fulfillment_id: FULFILLMENT_ID,
      order_id: ORDER_ID,
      shop_id: 70318112938,
    });
  });
});

describe('the email of a shipping event', () => {
  it('comes from the stored order when the fulfillment carries none', () => {
    const out = mapWebhook(
      input('fulfillments/create', { ...created(), email: null }, { order: { ...STORED_ORDER, email: 'order.email@example.com' } }),
    );
    expect(out.messages[0]?.email).toBe('order.email@example.com');
    expect(out.fulfillmentState?.email).toBe('order.email@example.com');
  });

  it('comes from the stored order for an event of a fulfillment never seen, with the order name and items', () => {
    const out = mapWebhook(input('fulfillment_events/create', event('out-for-delivery'), { fulfillment: null, order: STORED_ORDER }));
    expect(out.messages[0]?.email).toBe(JANE);
    expect(out.messages[0]?.body.event_attribute).toMatchObject({
      order_name: '#1042',
      tracking_numbers: [],
      tracking_urls: [],
      tracking_company: null,
      line_items: [BEANIE, SOCKS, TOTE],
    });
  });

  it("prefers the payload's, then the stored fulfillment's, to the order's; trimmed and lower-cased", () => {
    const order = { ...STORED_ORDER, email: 'order@example.com' };
    expect(
      mapWebhook(input('fulfillments/create', { ...created(), email: ' Jane.Okafor@Example.COM ' }, { order })).messages[0]?.email,
    ).toBe(JANE);
    const stored = { ...SHIPPED, email: 'fulfillment@example.com' };
    expect(mapWebhook(input('fulfillment_events/create', event('delivered'), { fulfillment: stored, order })).messages[0]?.email).toBe(
      'fulfillment@example.com',
    );
  });

  it('falls back to the email of the last message stored for the order (orderEmail)', () => {
    expect(mapWebhook(input('fulfillment_events/create', event('delivered'), { orderEmail: JANE })).messages[0]?.email).toBe(JANE);
  });

  it('when unknown, leaves the event ignored and unsent, so a later webhook of the fulfillment can send it', () => {
    const first = mapWebhook(input('fulfillment_events/create', event('out-for-delivery')));
    expect(first).toMatchObject({ ignored: 'no email known for the order yet', customerId: null });
    // recorded as skipped: a later version with an email replaces it (the intake does that)
    expect(first.messages.map((m) => [m.eventName, m.skip?.kind])).toEqual([['shipment_out_for_delivery', 'no_email']]);
    expect(first.fulfillmentState).toEqual({
      fulfillmentId: FULFILLMENT_ID,
      orderId: ORDER_ID,
      orderName: null,
      trackingCompany: null,
      trackingNumbers: [],
      trackingUrls: [],
      lineItems: [],
      email: null,
      sent: [],
    });
    // the fulfillment's own webhook brings the email: both events go, with its tracking
    const later = mapWebhook(input('fulfillments/update', updated(), { fulfillment: first.fulfillmentState }));
    expect(names(later)).toEqual(['order_shipped', 'shipment_out_for_delivery']);
    expect(later.messages[1]?.body.event_attribute).toMatchObject(TRACKING);
  });
});

describe('arrival order and repeats', () => {
  /** One of each webhook a fulfillment goes through, in the order Shopify usually sends them. */
  const everyStep = (): Step[] => [
    ['fulfillments/create', created()],
    ['fulfillments/update', updated()],
    ['fulfillment_events/create', event('out-for-delivery')],
    ['fulfillment_events/create', event('attempted-delivery')],
    ['fulfillment_events/create', event('delivered')],
  ];

  it('drops an out_for_delivery that arrives after delivered', () => {
    const outs = play([
      ['fulfillments/create', created()],
      ['fulfillment_events/create', event('delivered')],
      ['fulfillment_events/create', event('out-for-delivery')],
    ]);
    expect(outs.map(names)).toEqual([['order_shipped'], ['shipment_delivered'], []]);
    expect(outs[2]?.ignored).toBe('the shipment was already delivered');
    expect(outs[2]?.fulfillmentState?.sent).toEqual(['order_shipped', 'shipment_delivered']);
  });

  it('sends a failed attempt before the delivery, but no failure after it', () => {
    const before = play(
      [
        ['fulfillment_events/create', event('attempted-delivery')],
        ['fulfillment_events/create', event('delivered')],
      ],
      { fulfillment: SHIPPED },
    );
    expect(before.map(names)).toEqual([['shipment_delivery_failed'], ['shipment_delivered']]);
    const after = play(
      [
        ['fulfillment_events/create', event('delivered')],
        ['fulfillment_events/create', event('failure')],
      ],
      { fulfillment: SHIPPED },
    );
    expect(after.map(names)).toEqual([['shipment_delivered'], []]);
    expect(after[1]?.ignored).toBe('the shipment was already delivered');
  });

  it('sends one shipment_delivery_failed per fulfillment, for a failed attempt or a failure', () => {
    const outs = play(
      [
        ['fulfillment_events/create', event('attempted-delivery')],
        ['fulfillment_events/create', event('failure')],
      ],
      { fulfillment: SHIPPED },
    );
    expect(outs.map(names)).toEqual([['shipment_delivery_failed'], []]);
    expect(outs[1]?.ignored).toBe('shipment_delivery_failed already sent for this fulfillment');
  });

  it('does not announce as shipped a fulfillment whose delivery arrived first', () => {
    const outs = play(
      [
        ['fulfillment_events/create', event('delivered')],
        ['fulfillments/create', created()],
      ],
      { order: STORED_ORDER },
    );
    expect(outs.map(names)).toEqual([['shipment_delivered'], []]);
    // the event came first: it knew the order's items but not the tracking yet
    expect(outs[0]?.messages[0]?.body.event_attribute).toMatchObject({ tracking_numbers: [], line_items: [BEANIE, SOCKS, TOTE] });
    expect(outs[1]?.ignored).toBe('the shipment was already delivered');
    expect(outs[1]?.fulfillmentState).toEqual({ ...SHIPPED, sent: ['shipment_delivered'] });
  });

  it('sends a status event that precedes fulfillments/create, then order_shipped with the tracking', () => {
    const outs = play(
      [
        ['fulfillment_events/create', event('out-for-delivery')],
        ['fulfillments/create', created()],
      ],
      { order: STORED_ORDER },
    );
    expect(outs.map(names)).toEqual([['shipment_out_for_delivery'], ['order_shipped']]);
    expect(outs[1]?.messages[0]?.body.event_attribute).toMatchObject(TRACKING);
  });

  it('sends nothing new when any webhook repeats with the same state', () => {
    const steps = everyStep();
    for (const step of steps) {
      const [first, again] = play([step, step], { order: STORED_ORDER });
      expect(first?.messages.length).toBeGreaterThan(0);
      expect(again?.messages).toEqual([]);
      expect(again?.ignored).toMatch(/already sent for this fulfillment$/);
      expect(again?.fulfillmentState).toEqual(first?.fulfillmentState);
    }
  });

  it('in every arrival order, sends each event at most once and nothing after delivered', () => {
    const steps = everyStep();
    const permutations = (xs: Step[]): Step[][] =>
      xs.length <= 1 ? [xs] : xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));
    const orders = permutations(steps);
    expect(orders).toHaveLength(120);
    for (const order of orders) {
      const sent = play([...order, ...order], { order: STORED_ORDER }).flatMap(names);
      expect(new Set(sent).size).toBe(sent.length);
      expect(sent.filter((n) => n === 'shipment_delivered')).toHaveLength(1);
      expect(sent.at(-1)).toBe('shipment_delivered');
    }
  });

  it('gives the same source id to one status from either topic, so the outbox keeps one even without stored state', () => {
    const fromUpdate = mapWebhook(input('fulfillments/update', { ...updated(), shipment_status: 'delivered' }));
    const fromEvent = mapWebhook(input('fulfillment_events/create', event('delivered'), { orderEmail: JANE }));
    expect(fromUpdate.messages.find((m) => m.eventName === 'shipment_delivered')?.sourceId).toBe(sourceId('shipment_delivered'));
    expect(fromEvent.messages[0]?.sourceId).toBe(sourceId('shipment_delivered'));
  });
});

describe('the merchant switches', () => {
  it('are all on by default', () => {
    expect([
      EVENT_DEFAULTS.order_shipped,
      EVENT_DEFAULTS.shipment_out_for_delivery,
      EVENT_DEFAULTS.shipment_delivered,
      EVENT_DEFAULTS.shipment_delivery_failed,
    ]).toEqual([true, true, true, true]);
  });

  it('record a turned-off event as ignored and passed: turning it on later does not send it late', () => {
    const off = settingsWith({ events: { shipment_out_for_delivery: false } });
    const out = mapWebhook(input('fulfillment_events/create', event('out-for-delivery'), { fulfillment: SHIPPED, settings: off }));
    expect(out).toMatchObject({ ignored: 'event shipment_out_for_delivery is turned off', messages: [] });
    expect(out.fulfillmentState?.sent).toEqual(['order_shipped', 'shipment_out_for_delivery']);
    const again = mapWebhook(input('fulfillment_events/create', event('out-for-delivery'), { fulfillment: out.fulfillmentState }));
    expect(again.messages).toEqual([]);
  });

  it('a turned-off delivered still ends the story', () => {
    const off = settingsWith({ events: { shipment_delivered: false } });
    const outs = play(
      [
        ['fulfillment_events/create', event('delivered')],
        ['fulfillment_events/create', event('out-for-delivery')],
      ],
      { fulfillment: SHIPPED, settings: off },
    );
    expect(outs.map(names)).toEqual([[], []]);
    expect(outs.map((o) => o.ignored)).toEqual(['event shipment_delivered is turned off', 'the shipment was already delivered']);
  });

  it('turn off order_shipped alone, leaving the status of the same webhook on', () => {
    const out = mapWebhook(input('fulfillments/update', updated(), { settings: settingsWith({ events: { order_shipped: false } }) }));
    expect(names(out)).toEqual(['shipment_out_for_delivery']);
    expect(out.fulfillmentState?.sent).toEqual(['order_shipped', 'shipment_out_for_delivery']);
  });
});

describe('order summaries', () => {
  it('orderSummaryOf keeps what shipping events need, with exact ids', () => {
    expect(orderSummaryOf(fixture('orders-create'))).toEqual(STORED_ORDER);
    expect(orderSummaryOf([1, 2])).toBeNull();
    expect(orderSummaryOf({ name: '#1' })).toBeNull();
  });

  it.each([
    ['orders/create', 'orders-create'],
    ['orders/paid', 'orders-paid'],
    ['orders/fulfilled', 'orders-fulfilled'],
    ['orders/cancelled', 'orders-cancelled'],
  ])('%s returns its summary to store, even with its event turned off', (topic, name) => {
    const payload = fixture(name);
    const all = settingsWith({ events: { order_placed: false, order_paid: false, order_fulfilled: false, order_cancelled: false } });
    const out = mapWebhook(input(topic, payload, { settings: all }));
    expect(out.messages).toEqual([]);
    expect(out.orderSummary).toEqual(orderSummaryOf(payload));
    expect(out.orderSummary?.orderId).toBe(String(payload.id));
  });

  it('gives the stored order email to a later shipping event', () => {
    const order = mapWebhook(input('orders/create', fixture('orders-create'))).orderSummary ?? null;
    expect(mapWebhook(input('fulfillment_events/create', event('delivered'), { order })).messages[0]?.email).toBe(JANE);
  });
});

describe('topics and lookups', () => {
  it.each([
    ['FULFILLMENTS_CREATE', 'fulfillments/create'],
    ['FULFILLMENTS_UPDATE', 'fulfillments/update'],
    ['FULFILLMENT_EVENTS_CREATE', 'fulfillment_events/create'],
    ['fulfillment_events/create', 'fulfillment_events/create'],
    ['ORDERS_CREATE', 'orders/create'],
    ['BULK_OPERATIONS_FINISH', 'bulk_operations/finish'],
    ['CUSTOMERS_DATA_REQUEST', 'customers/data_request'],
    ['SHOP_REDACT', 'shop/redact'],
    ['APP_UNINSTALLED', 'app/uninstalled'],
  ])('normalizeTopic(%s) is %s', (raw, topic) => {
    expect(normalizeTopic(raw)).toBe(topic);
  });

  it('lookupKeys names the fulfillment and the order of the shipping topics, exactly', () => {
    const keys = { customerId: null, orderId: ORDER_ID, fulfillmentId: FULFILLMENT_ID };
    expect(lookupKeys('fulfillments/create', created())).toEqual(keys);
    expect(lookupKeys('FULFILLMENTS_UPDATE', updated())).toEqual(keys);
    expect(lookupKeys('fulfillment_events/create', event('delivered'))).toEqual(keys);
  });
});

describe('sandbox samples', () => {
  it('are deterministic and tell one story: the fulfillment of order n and its carrier events', () => {
    expect(sampleFulfillment(7)).toEqual(sampleFulfillment(7));
    expect(sampleFulfillmentEvent(7, 'delivered')).toEqual(sampleFulfillmentEvent(7, 'delivered'));
    const f = sampleFulfillment(7, { order: 3 });
    expect(f).toMatchObject({ order_id: sampleOrder(3).id, email: sampleOrder(3).email, name: '#1003.1' });
    expect(sampleFulfillmentEvent(7, 'delivered', { order: 3 })).toMatchObject({
      fulfillment_id: f.id,
      order_id: sampleOrder(3).id,
      status: 'delivered',
    });
  });

  it('play through the mapper as order_shipped, then each forwarded status once', () => {
    const n = 11;
    const steps: Step[] = [
      ['fulfillments/create', sampleFulfillment(n)],
      ...SHIPMENT_SEQUENCE.map((s): Step => ['fulfillment_events/create', sampleFulfillmentEvent(n, s)]),
    ];
    const outs = play(JSON.parse(JSON.stringify(steps)) as Step[]);
    expect(outs.map(names)).toEqual([['order_shipped'], [], ['shipment_out_for_delivery'], ['shipment_delivered']]);
    expect(outs[3]?.messages[0]).toMatchObject({ email: sampleOrder(n).email, orderId: String(sampleOrder(n).id) });
    expect(outs[3]?.messages[0]?.body.event_attribute).toMatchObject({ order_name: '#1011', tracking_numbers: ['1Z999AA10000000011'] });
  });
});
