// Customers as Shopify 2026-10 sends them, through the whole app on both databases: consent,
// tags and the purchasing summary from their own topics, in either arrival order; an older fact
// never wins; a change no event carries arrives as one deferred customer_updated; an email change
// is announced, and a privacy request covers both addresses.
import { TestClock } from '../helpers/clock';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';

const AMARA = '7300000000000000001';
const EMAIL = 'amara.nwosu@example.com';
const NEW_EMAIL = 'amara@nwosu.ca';
const fixture = (s: Stack, name: string) => s.raw(`2026-10/${name}`);

describe(`customer topics of API 2026-10 (${testProvider})`, () => {
  let s: Stack;
  const clock = new TestClock();
  let n = 0;
  beforeAll(async () => {
    s = await startStack({ server: { now: clock.now } });
  });
  afterAll(() => s.close());

  /** A fresh shop, connected, and a sender of its webhooks. */
  async function shop() {
    const domain = `customers-${++n}.myshopify.com`;
    const { workspaceId } = await s.connectShop(domain);
    const shopId = (await s.app.db.shop.findUniqueOrThrow({ where: { domain } })).id;
    const send = (topic: string, body: string, id = `${domain}:${topic}:${Math.random()}`) =>
      s.webhook(topic, body, { domain, webhookId: id });
    /** What the service received: each event's email, contact properties and attributes side by side. */
    const events = (eventName?: string) =>
      s.emulator
        .events({ workspaceId, ...(eventName ? { eventName } : {}) })
        .map((e): Record<string, unknown> => ({ email: e.email, ...e.contactProperties, event_attribute: e.event_attribute }));
    /** Lets due messages go: jumps the clock to each queued message in turn until none waits. */
    const drain = async () => {
      for (let i = 0; i < 20 && (await clock.advanceToNextDue(s.app.db)); i++) {
        s.app.worker.nudge();
        await new Promise((r) => setTimeout(r, 50));
        if ((await s.app.db.outboxMessage.count({ where: { shopId, status: { in: ['queued', 'delivering'] } } })) === 0) break;
      }
    };
    return { domain, shopId, workspaceId, send, events, drain };
  }

  it.each([
    ['the customer first', ['customers/create', 'customers_email_marketing_consent/update']],
    ['the consent first', ['customers_email_marketing_consent/update', 'customers/create']],
  ])('announces a subscription once, %s', async (_, order) => {
    const sh = await shop();
    const files: Record<string, string> = {
      'customers/create': 'customers-create',
      'customers_email_marketing_consent/update': 'customers-email-marketing-consent-update',
    };
    for (const topic of order) await sh.send(topic, fixture(s, files[topic]!));
    await s.until(() => sh.events('customer_created').length && sh.events('email_subscribed').length, 10_000, 'both events');
    const subscribed = sh.events('email_subscribed');
    expect(subscribed).toHaveLength(1);
    expect(subscribed[0]).toMatchObject({ email: EMAIL, email_marketing_state: 'subscribed', shopify_customer_id: AMARA });
    // the creation carries the consent whichever came first, once it is known
    const created = sh.events('customer_created')[0]!;
    expect(created).toMatchObject({ email: EMAIL, first_name: 'Amara', province_code: 'ON' });
    if (order[0] === 'customers_email_marketing_consent/update') expect(created.email_marketing_state).toBe('subscribed');
    const row = await s.app.db.customerProfile.findUniqueOrThrow({
      where: { shopId_customerId: { shopId: sh.shopId, customerId: AMARA } },
    });
    expect(row.email).toBe(EMAIL);
    expect(JSON.parse(row.data).emailConsent.value.state).toBe('subscribed');
  });

  it('never lets an older consent win, nor announces a repeat', async () => {
    const sh = await shop();
    await sh.send('customers/create', fixture(s, 'customers-create'));
    const older = fixture(s, 'customers-email-marketing-consent-update');
    const newer = older.replace('"subscribed"', '"unsubscribed"').replace('2026-11-10T09:16:30-05:00', '2026-11-18T10:00:00-05:00');
    await sh.send('customers_email_marketing_consent/update', newer);
    await sh.send('customers_email_marketing_consent/update', older);
    await sh.send('customers_email_marketing_consent/update', newer);
    await s.until(() => sh.events('email_unsubscribed').length, 10_000, 'email_unsubscribed');
    await sh.drain();
    expect(sh.events('email_unsubscribed')).toHaveLength(1);
    expect(sh.events('email_subscribed')).toEqual([]);
    const row = await s.app.db.customerProfile.findUniqueOrThrow({
      where: { shopId_customerId: { shopId: sh.shopId, customerId: AMARA } },
    });
    expect(JSON.parse(row.data).emailConsent.value.state).toBe('unsubscribed');
  });

  it('sends tags, SMS consent and the purchasing summary as one customer_updated a minute later', async () => {
    const sh = await shop();
    await sh.send('customers/create', fixture(s, 'customers-create'));
    await s.until(() => sh.events('customer_created').length, 10_000, 'customer_created');
    await sh.send('customer.tags_added', fixture(s, 'customer-tags-added'));
    await sh.send('customers_marketing_consent/update', fixture(s, 'customers-marketing-consent-update'));
    await sh.send('customers/purchasing_summary', fixture(s, 'customers-purchasing-summary'));
    const waiting = await s.app.db.outboxMessage.findMany({ where: { shopId: sh.shopId, eventName: 'customer_updated' } });
    expect(waiting.map((m) => m.status)).toEqual(['queued']);
    expect(waiting[0]!.runAt.getTime()).toBeGreaterThan(clock.now().getTime() + 30_000);
    await sh.drain();
    const updates = sh.events('customer_updated');
    expect(updates).toHaveLength(1);
    expect(updates[0]).toMatchObject({
      email: EMAIL,
      tags: ['VIP', 'wholesale'],
      sms_marketing_state: 'subscribed',
      orders_count: 3,
      total_spent: 412.85,
      currency: 'CAD',
    });
    // nothing selected changed: nothing more
    await sh.send('customer.tags_added', fixture(s, 'customer-tags-added'));
    await sh.drain();
    expect(sh.events('customer_updated')).toHaveLength(1);
  });

  it('keeps what arrives before the customer, and creates the customer with it', async () => {
    const sh = await shop();
    await sh.send('customers/purchasing_summary', fixture(s, 'customers-purchasing-summary'));
    await sh.send('customer.tags_added', fixture(s, 'customer-tags-added'));
    await sh.send('customers_marketing_consent/update', fixture(s, 'customers-marketing-consent-update'));
    await sh.send('customers/create', fixture(s, 'customers-create'));
    await sh.drain();
    // nothing to send before the customer has an address: the creation carries it all
    expect(sh.events().map((e) => e.event_attribute)).toHaveLength(1);
    expect(sh.events('customer_created')[0]).toMatchObject({
      email: EMAIL,
      tags: ['VIP', 'wholesale'],
      sms_marketing_state: 'subscribed',
      orders_count: 3,
      total_spent: 412.85,
    });
  });

  it('ends a 2026-10 checkout’s abandonment by the order’s token (no checkout_id, no checkout id)', async () => {
    const sh = await shop();
    // active just now, so the abandonment is due within its delay
    const now = clock.now().toISOString();
    const checkout = fixture(s, 'checkouts-create').replace(/"(created|updated)_at": "[^"]+"/g, `"$1_at": "${now}"`);
    await sh.send('checkouts/create', checkout);
    await sh.send('orders/create', fixture(s, 'orders-create'));
    await sh.drain();
    expect(sh.events('checkout_started')).toHaveLength(1);
    expect(sh.events('checkout_abandoned')).toEqual([]);
    const abandoned = await s.app.db.outboxMessage.findFirstOrThrow({ where: { shopId: sh.shopId, eventName: 'checkout_abandoned' } });
    expect(abandoned).toMatchObject({ status: 'cancelled', checkoutToken: 'c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8' });
  });

  it('lets an order within the minute carry the change instead', async () => {
    const sh = await shop();
    await sh.send('customers/create', fixture(s, 'customers-create'));
    await sh.send('customer.tags_added', fixture(s, 'customer-tags-added'));
    await sh.send('orders/create', fixture(s, 'orders-create'));
    await sh.drain();
    const placed = sh.events('order_placed');
    expect(placed).toHaveLength(1);
    expect(placed[0]).toMatchObject({ tags: ['VIP', 'wholesale'], locale: 'fr-CA', last_order_at: '2026-11-20T18:05:20.000Z' });
    expect(sh.events('customer_updated')).toEqual([]);
    const deferred = await s.app.db.outboxMessage.findFirstOrThrow({ where: { shopId: sh.shopId, eventName: 'customer_updated' } });
    expect(deferred).toMatchObject({ status: 'cancelled', lastError: 'carried by order_placed' });
  });

  it('brings a waiting historical import up to the newest consent', async () => {
    const sh = await shop();
    await sh.send('customers/create', fixture(s, 'customers-create'));
    // an import queued before the live change, behind a backlog (history goes last)
    await s.app.db.outboxMessage.create({
      data: {
        shopId: sh.shopId,
        sourceId: `import:customer:${AMARA}`,
        topic: 'import/customers',
        eventName: 'customer_imported',
        deliveryClass: 3,
        email: EMAIL,
        customerId: AMARA,
        body: JSON.stringify({
          event_name: 'customer_imported',
          email: EMAIL,
          email_marketing_state: 'subscribed',
          accepts_marketing: true,
          event_attribute: { historical: true },
        }),
        status: 'held',
        heldReason: 'invalid_key',
        runAt: clock.now(),
        dueAt: clock.now(),
      },
    });
    const unsubscribed = fixture(s, 'customers-email-marketing-consent-update').replace('"subscribed"', '"unsubscribed"');
    await sh.send('customers_email_marketing_consent/update', unsubscribed);
    const imported = await s.app.db.outboxMessage.findFirstOrThrow({ where: { shopId: sh.shopId, sourceId: `import:customer:${AMARA}` } });
    expect(JSON.parse(imported.body)).toMatchObject({
      email_marketing_state: 'unsubscribed',
      accepts_marketing: false,
      event_attribute: { historical: true },
    });
  });

  it('announces an email change, and a privacy request then covers both addresses', async () => {
    const sh = await shop();
    await sh.send('customers/create', fixture(s, 'customers-create'));
    await sh.send('customers/update', fixture(s, 'customers-update').replace('Amara.Nwosu@example.com', NEW_EMAIL));
    await s.until(() => sh.events('email_changed').length, 10_000, 'email_changed');
    expect(sh.events('email_changed')[0]).toMatchObject({
      email: NEW_EMAIL,
      event_attribute: { previous_email: EMAIL, customer_id: AMARA },
    });
    // later events go to the new address
    await sh.send('customer.tags_added', fixture(s, 'customer-tags-added'));
    await sh.drain();
    expect(sh.events('customer_updated').map((e) => e.email)).toEqual([NEW_EMAIL, NEW_EMAIL]);

    // the exact id, past 2^53, as Shopify writes it
    const body = `{"shop_id":1,"shop_domain":"${sh.domain}","customer":{"id":${AMARA},"email":"${NEW_EMAIL}"},"orders_requested":[],"data_request":{"id":901}}`;
    await sh.send('customers/data_request', body);
    const exported = await s.app.db.dataExport.findFirstOrThrow({ where: { shopId: sh.shopId } });
    const content = JSON.parse(exported.content);
    expect(content.customer.known_emails).toEqual([NEW_EMAIL, EMAIL]);
    expect(content.events.map((e: { sent: { email: string } }) => e.sent.email)).toEqual(expect.arrayContaining([EMAIL, NEW_EMAIL]));
    expect(content.profile[0]).toMatchObject({ customerId: AMARA, formerEmails: [EMAIL] });

    await sh.send('customers/redact', body.replace('"orders_requested":[],"data_request":{"id":901}', '"orders_to_redact":[]'));
    const deletes = await s.app.db.outboxMessage.findMany({ where: { shopId: sh.shopId, kind: 'contact_delete' } });
    expect(deletes.map((d) => d.email).sort()).toEqual([EMAIL, NEW_EMAIL].sort());
    const left = await s.app.db.outboxMessage.count({ where: { shopId: sh.shopId, kind: 'event', email: { in: [EMAIL, NEW_EMAIL] } } });
    expect(left).toBe(0);
    expect(await s.app.db.customerProfile.count({ where: { shopId: sh.shopId } })).toBe(0);
    expect(await s.app.db.dataExport.count({ where: { shopId: sh.shopId } })).toBe(0);
    await sh.drain();
    expect([...s.emulator.deletedContacts(sh.workspaceId)].sort()).toEqual([EMAIL, NEW_EMAIL].sort());
  });
});
