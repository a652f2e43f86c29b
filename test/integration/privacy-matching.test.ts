// Privacy requests touch exactly one customer (issue 35): customers/data_request exports, and
// customers/redact erases, what belongs to the customer it names, matched by the normalised
// email, the customer id and the order ids, never by a substring of a stored body. Each case
// pairs that customer with another whose email or ids hold the first one's as a substring, or
// match it once `_` and `%` are read as LIKE wildcards.
import { randomUUID } from 'node:crypto';
import { sampleCheckout, sampleCustomer, sampleFulfillment, sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { activatePixel, batch, ev, MUG, postPixel, sendBatch, TOTE } from '../helpers/pixel';
import { startStack, type Stack } from '../helpers/stack';

interface Person {
  email: string;
  customerId: number;
  orderId: number;
  /** Seed of the sample payloads (fulfillment id, checkout token, line items). */
  n: number;
}

interface Case {
  name: string;
  /** The customer the privacy requests name. */
  target: Person;
  /** Another customer of the same shop, whose data must be left alone. */
  other: Person;
}

const CASES: Case[] = [
  {
    name: 'ann@gmail.com beside joann@gmail.com',
    target: { email: 'ann@gmail.com', customerId: 7_100_000_000_001, orderId: 5_100_000_000_001, n: 1 },
    other: { email: 'joann@gmail.com', customerId: 7_100_000_000_002, orderId: 5_100_000_000_002, n: 2 },
  },
  {
    name: 'a_b@example.com beside axb@example.com',
    target: { email: 'a_b@example.com', customerId: 7_100_000_000_011, orderId: 5_100_000_000_011, n: 11 },
    other: { email: 'axb@example.com', customerId: 7_100_000_000_012, orderId: 5_100_000_000_012, n: 12 },
  },
  {
    name: 'a%b@example.com beside axxb@example.com',
    target: { email: 'a%b@example.com', customerId: 7_100_000_000_021, orderId: 5_100_000_000_021, n: 21 },
    other: { email: 'axxb@example.com', customerId: 7_100_000_000_022, orderId: 5_100_000_000_022, n: 22 },
  },
  {
    name: 'customer 1234 and order 2345 beside customer 12345 and order 23456',
    target: { email: 'first.buyer@example.com', customerId: 1234, orderId: 2345, n: 31 },
    other: { email: 'second.buyer@example.com', customerId: 12345, orderId: 23456, n: 32 },
  },
];

const customerOf = (p: Person) => ({
  ...sampleCustomer(p.n),
  id: p.customerId,
  email: p.email,
  admin_graphql_api_id: `gid://shopify/Customer/${p.customerId}`,
});

function orderOf(p: Person) {
  const o = sampleOrder(p.n);
  return {
    ...o,
    id: p.orderId,
    admin_graphql_api_id: `gid://shopify/Order/${p.orderId}`,
    email: p.email,
    contact_email: p.email,
    order_status_url: `https://demo-store.myshopify.com/orders/${p.orderId}/authenticate?key=k${p.n}`,
    customer: { ...o.customer, id: p.customerId, email: p.email },
  };
}

const fulfillmentOf = (p: Person) => ({ ...sampleFulfillment(p.n), order_id: p.orderId, email: p.email });

function checkoutOf(p: Person) {
  const c = sampleCheckout(p.n);
  return { ...c, email: p.email, customer: { ...c.customer, id: p.customerId, email: p.email } };
}

type Holdings = Awaited<ReturnType<typeof holdingsOf>>;

interface ExportContent {
  customer: { id: string; email: string };
  events: Array<{ sent: { email: string } }>;
  orders: Array<{ orderId: string; email: string }>;
  shipments: Array<{ orderId: string; email: string }>;
  storefront: { visitors: Array<{ client_id: string }> };
}

// A delivery that succeeds clears an older connection error: the errors the tests set are
// stamped after every delivery they cause, so only the redaction can clear them.
const AFTER_EVERY_DELIVERY = new Date(Date.now() + 86_400_000);

/** What the shop holds of `p`, found by exact column values: the row keys of every table. */
async function holdingsOf(s: Stack, shopId: string, p: Person) {
  const customerId = String(p.customerId);
  const orderId = String(p.orderId);
  const [messages, orders, fulfillments, digests, exports, visitors] = await Promise.all([
    s.app.db.outboxMessage.findMany({
      where: { shopId, kind: 'event', OR: [{ email: p.email }, { customerId }, { orderId }] },
      select: { id: true },
    }),
    s.app.db.orderSummary.findMany({ where: { shopId, OR: [{ email: p.email }, { customerId }, { orderId }] }, select: { orderId: true } }),
    s.app.db.fulfillmentState.findMany({ where: { shopId, OR: [{ email: p.email }, { orderId }] }, select: { fulfillmentId: true } }),
    s.app.db.customerProfile.findMany({ where: { shopId, customerId }, select: { customerId: true } }),
    s.app.db.dataExport.findMany({ where: { shopId, customerId }, select: { id: true } }),
    s.app.db.pixelVisitor.findMany({ where: { shopId, email: p.email }, select: { clientId: true } }),
  ]);
  return {
    messages: messages.map((m) => m.id).sort((a, b) => a - b),
    orders: orders.map((o) => o.orderId),
    fulfillments: fulfillments.map((f) => f.fulfillmentId),
    digests: digests.map((d) => d.customerId),
    exports: exports.map((e) => e.id),
    visitors: visitors.map((v) => v.clientId),
  };
}

describe(`privacy requests match exactly one customer (${testProvider})`, () => {
  let s: Stack;
  let shops = 0;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(() => s?.close());

  /** A fresh shop, connected, with its storefront pixel active. */
  async function newShop(): Promise<{ domain: string; shopId: string; key: string }> {
    const domain = `privacy-${++shops}.myshopify.com`;
    const { shopId } = await s.connectShop(domain, { rateLimit: 1000 });
    const key = await activatePixel(s, domain);
    return { domain, shopId, key };
  }

  const holdings = (shopId: string, p: Person) => holdingsOf(s, shopId, p);

  /** Stores, for `p`: a customer, a checkout, an order, its shipment and a storefront visit; returns the visitor's client id. */
  async function fill(shop: { domain: string; key: string }, p: Person, tag: string): Promise<string> {
    const send = (topic: string, payload: unknown, id: string) =>
      s.webhook(topic, payload, { domain: shop.domain, webhookId: `${tag}-${id}` });
    expect((await send('customers/create', customerOf(p), 'customer')).status).toBe(200);
    expect((await send('checkouts/create', checkoutOf(p), 'checkout')).status).toBe(200);
    expect((await send('orders/create', orderOf(p), 'order')).status).toBe(200);
    expect((await send('fulfillments/create', fulfillmentOf(p), 'fulfillment')).status).toBe(200);
    const client = randomUUID();
    expect(await sendBatch(s, batch(shop.key, client, [ev.view(MUG), ev.add(MUG)], { email: p.email }))).toBe(204);
    return client;
  }

  /** customers/data_request for `p`, answered; returns the export's content. */
  async function dataRequest(shop: { domain: string; shopId: string }, p: Person, requestId: number): Promise<ExportContent> {
    const payload = {
      shop_id: 1,
      shop_domain: shop.domain,
      customer: { id: p.customerId, email: p.email, phone: null },
      orders_requested: [p.orderId],
      data_request: { id: requestId },
    };
    expect((await s.webhook('customers/data_request', payload, { domain: shop.domain })).status).toBe(200);
    const row = await s.app.db.dataExport.findUniqueOrThrow({
      where: { shopId_requestId: { shopId: shop.shopId, requestId: String(requestId) } },
    });
    return JSON.parse(row.content) as ExportContent;
  }

  describe.each(CASES)('$name', ({ target, other }) => {
    let shop: { domain: string; shopId: string; key: string };
    let clients: { target: string; other: string };
    let before: { target: Holdings; other: Holdings };
    let exported: { target: ExportContent; other: ExportContent };

    beforeAll(async () => {
      shop = await newShop();
      clients = { target: await fill(shop, target, `${shop.domain}-t`), other: await fill(shop, other, `${shop.domain}-o`) };
      exported = { target: await dataRequest(shop, target, 9001), other: await dataRequest(shop, other, 9002) };
      before = { target: await holdings(shop.shopId, target), other: await holdings(shop.shopId, other) };
      // both customers hold something in every table (or the checks below would prove nothing)
      for (const h of [before.target, before.other]) {
        expect(h.messages.length).toBeGreaterThanOrEqual(4);
        expect([h.orders.length, h.fulfillments.length, h.digests.length, h.exports.length, h.visitors.length]).toEqual([1, 1, 1, 1, 1]);
      }
    }, 60_000);

    it('customers/data_request exports the customer’s events, orders, shipments and visits, and none of the other customer’s', () => {
      for (const [p, content, h, client] of [
        [target, exported.target, before.target, clients.target],
        [other, exported.other, before.other, clients.other],
      ] as const) {
        expect(content.customer).toEqual({ id: String(p.customerId), email: p.email, known_emails: [p.email] });
        expect(content.events.map((e) => e.sent.email)).toEqual(h.messages.map(() => p.email));
        expect(content.orders.map((o) => [o.orderId, o.email])).toEqual([[String(p.orderId), p.email]]);
        expect(content.shipments.map((f) => [f.orderId, f.email])).toEqual([[String(p.orderId), p.email]]);
        expect(content.storefront.visitors.map((v) => v.client_id)).toEqual([client]);
      }
    });

    it('customers/redact erases the customer everywhere, pending receipts included, and leaves the other customer whole', async () => {
      // a service error that names the other customer: not the redacted one's to clear
      const otherError = `The service refused the event: contact ${other.email} is blocked.`;
      await s.app.db.connection.update({
        where: { shopId: shop.shopId },
        data: { lastError: otherError, lastErrorAt: AFTER_EVERY_DELIVERY },
      });

      const pending = (who: string, what: string) => `${shop.domain}-pending-${who}-${what}`;
      await s.app.processor.stop();
      try {
        const redact = {
          shop_id: 1,
          shop_domain: shop.domain,
          customer: { id: target.customerId, email: target.email.toUpperCase(), phone: null },
          orders_to_redact: [target.orderId],
        };
        expect(
          (
            await s.shop.sendWebhook(s.app.url, {
              topic: 'customers/redact',
              shopDomain: shop.domain,
              payload: redact,
              webhookId: `${shop.domain}-redact`,
            })
          ).status,
        ).toBe(200);
        // still pending when the redaction runs: an order update and a storefront visit of each customer
        for (const [who, p] of [
          ['target', target],
          ['other', other],
        ] as const) {
          const paid = await s.shop.sendWebhook(s.app.url, {
            topic: 'orders/paid',
            shopDomain: shop.domain,
            payload: orderOf(p),
            webhookId: pending(who, 'paid'),
          });
          expect(paid.status).toBe(200);
        }
        // each customer from a new device, giving the email
        for (const p of [target, other])
          expect((await postPixel(s, batch(shop.key, randomUUID(), [ev.view(TOTE)], { email: p.email }))).status).toBe(204);
      } finally {
        s.app.processor.start();
      }
      await s.settle();

      // the redacted customer: nothing left, pending receipts erased unprocessed
      expect(await holdings(shop.shopId, target)).toEqual({
        messages: [],
        orders: [],
        fulfillments: [],
        digests: [],
        exports: [],
        visitors: [],
      });
      // what may still name the address is the contact delete (it keeps it until sent)
      const named = await s.app.db.outboxMessage.findMany({
        where: { shopId: shop.shopId, OR: [{ email: target.email }, { kind: 'contact_delete' }] },
        select: { kind: true, sourceId: true },
      });
      expect(named).toEqual([{ kind: 'contact_delete', sourceId: `redact:${shop.domain}-redact` }]);
      expect(await s.app.db.webhookReceipt.findUniqueOrThrow({ where: { webhookId: pending('target', 'paid') } })).toMatchObject({
        outcome: 'erased',
        body: null,
      });
      const pixelReceipts = await s.app.db.webhookReceipt.findMany({
        where: { shopDomain: shop.domain, kind: 'pixel' },
        orderBy: { id: 'asc' },
      });
      expect(pixelReceipts.slice(-2).map((r) => r.outcome)).toEqual(['erased', 'accepted']);

      // the other customer: every row still there, and its pending receipts processed as usual
      const after = await holdings(shop.shopId, other);
      expect(after.messages).toEqual(expect.arrayContaining(before.other.messages));
      expect(after).toMatchObject({
        orders: before.other.orders,
        fulfillments: before.other.fulfillments,
        digests: before.other.digests,
        exports: before.other.exports,
      });
      expect(after.visitors).toEqual(expect.arrayContaining(before.other.visitors));
      expect(after.visitors).toHaveLength(2);
      expect(await s.app.db.webhookReceipt.findUniqueOrThrow({ where: { webhookId: pending('other', 'paid') } })).toMatchObject({
        outcome: 'accepted',
      });
      expect(
        await s.app.db.outboxMessage.count({ where: { shopId: shop.shopId, sourceId: pending('other', 'paid'), email: other.email } }),
      ).toBe(1);
      expect((await s.app.db.connection.findUniqueOrThrow({ where: { shopId: shop.shopId } })).lastError).toBe(otherError);
    }, 60_000);
  });

  it('customers/redact erases a pending storefront batch of the customer’s device that gives no email, and no other', async () => {
    const shop = await newShop();
    const [target, other] = [CASES[0]!.target, CASES[0]!.other];
    const clients = { target: await fill(shop, target, `${shop.domain}-t`), other: await fill(shop, other, `${shop.domain}-o`) };
    await s.app.processor.stop();
    try {
      const redact = {
        shop_id: 1,
        shop_domain: shop.domain,
        customer: { id: target.customerId, email: target.email, phone: null },
        orders_to_redact: [target.orderId],
      };
      await s.shop.sendWebhook(s.app.url, {
        topic: 'customers/redact',
        shopDomain: shop.domain,
        payload: redact,
        webhookId: `${shop.domain}-redact`,
      });
      // both devices, anonymous this time (a visitor's later pages carry no email)
      for (const client of [clients.target, clients.other])
        expect((await postPixel(s, batch(shop.key, client, [ev.view(TOTE)]))).status).toBe(204);
    } finally {
      s.app.processor.start();
    }
    await s.settle();
    const pixelReceipts = await s.app.db.webhookReceipt.findMany({
      where: { shopDomain: shop.domain, kind: 'pixel' },
      orderBy: { id: 'asc' },
    });
    expect(pixelReceipts.slice(-2).map((r) => r.outcome)).toEqual(['erased', 'accepted']);
    expect(await s.app.db.pixelEvent.count({ where: { shopId: shop.shopId, clientId: clients.target } })).toBe(0);
    expect(await s.app.db.pixelVisitor.findMany({ where: { shopId: shop.shopId }, select: { clientId: true } })).toEqual([
      { clientId: clients.other },
    ]);
  }, 60_000);

  it('customers/redact clears a connection error that names the customer’s address, and only then', async () => {
    const shop = await newShop();
    const clear = async (lastError: string, email: string): Promise<string | null> => {
      await s.app.db.connection.update({ where: { shopId: shop.shopId }, data: { lastError, lastErrorAt: AFTER_EVERY_DELIVERY } });
      const redact = {
        shop_id: 1,
        shop_domain: shop.domain,
        customer: { id: 7_200_000_000_000 + ++shops, email, phone: null },
        orders_to_redact: [],
      };
      expect((await s.webhook('customers/redact', redact, { domain: shop.domain })).status).toBe(200);
      return (await s.app.db.connection.findUniqueOrThrow({ where: { shopId: shop.shopId } })).lastError;
    };
    expect(await clear('The service refused the event: contact JoAnn@Gmail.com is blocked.', 'ann@gmail.com')).not.toBeNull();
    expect(await clear('Invalid contact axb@example.com', 'a_b@example.com')).not.toBeNull();
    expect(await clear('Invalid contact axxb@example.com', 'a%b@example.com')).not.toBeNull();
    expect(await clear('Invalid contact ann@gmail.community', 'ann@gmail.com')).not.toBeNull();
    expect(await clear('The service refused the event: contact Ann@Gmail.com is blocked.', 'ann@gmail.com')).toBeNull();
    expect(await clear('Invalid contact <a%b@example.com>.', 'a%b@example.com')).toBeNull();
  }, 60_000);

  it('customers/redact leaves a pending app/uninstalled alone, even when the shop’s own email is the customer’s', async () => {
    const shop = await newShop();
    const owner = 'owner@example.com';
    await s.app.processor.stop();
    try {
      const redact = {
        shop_id: 1,
        shop_domain: shop.domain,
        customer: { id: 7_300_000_000_001, email: owner, phone: null },
        orders_to_redact: [],
      };
      await s.shop.sendWebhook(s.app.url, {
        topic: 'customers/redact',
        shopDomain: shop.domain,
        payload: redact,
        webhookId: `${shop.domain}-redact`,
      });
      const uninstalled = {
        id: 1,
        name: 'Owner Store',
        email: owner,
        customer_email: owner,
        domain: shop.domain,
        myshopify_domain: shop.domain,
      };
      await s.shop.sendWebhook(s.app.url, {
        topic: 'app/uninstalled',
        shopDomain: shop.domain,
        payload: uninstalled,
        webhookId: `${shop.domain}-uninstalled`,
      });
    } finally {
      s.app.processor.start();
    }
    await s.settle();
    expect(await s.app.db.webhookReceipt.findUniqueOrThrow({ where: { webhookId: `${shop.domain}-uninstalled` } })).toMatchObject({
      outcome: 'accepted',
    });
    expect((await s.app.db.shop.findUniqueOrThrow({ where: { id: shop.shopId } })).uninstalledAt).toBeInstanceOf(Date);
  }, 60_000);
});
