// The answer table (docs/delivery.md#what-each-answer-of-the-service-means), end to end: each
// odd answer of the email service (or of something in front of it) leaves the message in the
// state the table says, with the attempts it says.
import { sampleCustomer, sampleOrder } from '../../sandbox/samples';
import type { FaultSpec } from '../../sandbox/service-emulator';
import { startServer } from '../../src/app/server';
import { TestClock } from '../helpers/clock';
import { testConfig } from '../helpers/config';
import { testProvider } from '../helpers/db';
import { API_KEY, API_SECRET, startStack, type Stack } from '../helpers/stack';
import { adhocServer, captureLogs, type AdhocServer } from '../unit/service/support';

describe(`answers of the email service (${testProvider})`, () => {
  let s: Stack;
  let elsewhere: AdhocServer;
  const clock = new TestClock();
  const logs = captureLogs('info');
  let n = 0;

  beforeAll(async () => {
    s = await startStack({ server: { now: clock.now, logger: logs.logger } });
    elsewhere = await adhocServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true}'));
  });
  afterAll(async () => {
    await s.close();
    await elsewhere.close();
  });
  afterEach(() => s.emulator.clearFaults());

  /** Advances the app's clock to each next due time until `done` (retries wait 5 s, 30 s, ...). */
  async function drive(done: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > end) throw new Error('timed out driving the clock');
      if (await clock.advanceToNextDue(s.app.db)) s.app.worker.nudge();
      await new Promise((r) => setTimeout(r, 40));
    }
  }

  async function order(domain: string, sourceId: string): Promise<void> {
    const res = await s.shop.sendWebhook(s.app.url, {
      topic: 'orders/create',
      shopDomain: domain,
      payload: sampleOrder(9_100 + ++n),
      webhookId: sourceId,
    });
    expect(res.status).toBe(200);
    // its message stored by stage 2
    await s.settle();
  }
  const messageOf = (sourceId: string) => s.app.db.outboxMessage.findFirstOrThrow({ where: { sourceId, eventName: 'order_placed' } });
  /** The message once its first attempt is recorded. */
  const afterFirstAttempt = (sourceId: string) =>
    s.until(
      async () => {
        const m = await s.app.db.outboxMessage.findFirst({ where: { sourceId, eventName: 'order_placed' } });
        return m && m.attempts >= 1 && m.status !== 'delivering' ? m : null;
      },
      10_000,
      `the first attempt of ${sourceId}`,
    );
  const received = (workspaceId: string, sourceId: string) =>
    s.emulator.events({ workspaceId }).filter((e) => e.event_attribute.source_id === sourceId);

  describe('answers that are not a delivery, and answers to try again later: retried, then delivered once', () => {
    it.each<[string, FaultSpec['mode'], number]>([
      ['200 {"success": false}', 'success_false', 200],
      ['200 with an HTML page (a proxy)', 'html200', 200],
      ['408', 'status408', 408],
      ['425', 'status425', 425],
      ['503', 'status503', 503],
      ['307 to another host', 'redirect307', 307],
    ])('%s', async (_label, mode, status) => {
      const domain = `answer-${mode.replace(/_/g, '-')}.myshopify.com`;
      const { workspaceId } = await s.connectShop(domain);
      s.emulator.injectFault({ mode, count: 1, path: '/webhook/send', location: `${elsewhere.url}/webhook/send/` });
      const sourceId = `${mode}-1`;
      await order(domain, sourceId);

      const first = await afterFirstAttempt(sourceId);
      // not delivered, not dead: queued for a retry, and the refused send not counted against the cap
      expect(first).toMatchObject({ status: 'queued', attempts: 1, lastStatus: status, sends: 0 });
      expect(first.lastError).toEqual(expect.any(String));
      expect(received(workspaceId, sourceId)).toEqual([]);

      await drive(async () => (await messageOf(sourceId)).status === 'delivered');
      expect(await messageOf(sourceId)).toMatchObject({ status: 'delivered', attempts: 2 });
      expect(received(workspaceId, sourceId)).toHaveLength(1);
      // a redirect is never followed: the other host saw nothing, the key least of all
      expect(elsewhere.seen).toEqual([]);
    });
  });

  it('400 is dead at once; 401 holds the shop as invalid_key', async () => {
    const bad = 'answer-400.myshopify.com';
    await s.connectShop(bad);
    s.emulator.injectFault({ mode: 'status400', count: 1, path: '/webhook/send' });
    await order(bad, 'status400-1');
    expect(await afterFirstAttempt('status400-1')).toMatchObject({ status: 'dead', attempts: 1, lastStatus: 400 });

    const refused = 'answer-401.myshopify.com';
    await s.connectShop(refused);
    s.emulator.injectFault({ mode: 'status401', count: 1, path: '/webhook/send' });
    await order(refused, 'status401-1');
    expect(await afterFirstAttempt('status401-1')).toMatchObject({ status: 'held', heldReason: 'invalid_key', attempts: 1 });
    expect((await s.api('GET', '/api/connection', undefined, refused)).body).toMatchObject({
      status: 'invalid_key',
      delivery_problem: null,
    });
  });

  describe('404 on send: a few tries, then the shop is held as a configuration problem, until the address answers', () => {
    const domain = 'answer-404.myshopify.com';
    const ids = ['nf-0', 'nf-1', 'nf-2'];
    let workspaceId: string;
    const held = async () =>
      s.app.db.outboxMessage.findMany({ where: { sourceId: { in: ids }, status: 'held', heldReason: 'service_not_found' } });

    it('three attempts, then every message of the shop is held (service_not_found), none dead, and the page says what to do', async () => {
      ({ workspaceId } = await s.connectShop(domain));
      s.emulator.injectFault({ mode: 'status404', count: 10_000, path: '/webhook/send' });
      for (const id of ids) await order(domain, id);
      await drive(async () => (await held()).length === ids.length);
      const messages = await s.app.db.outboxMessage.findMany({ where: { sourceId: { in: ids } } });
      expect(messages.map((m) => m.status)).toEqual(['held', 'held', 'held']);
      // the first to reach three attempts held the shop; the others were held at their next 404
      expect(Math.max(...messages.map((m) => m.attempts))).toBe(3);
      expect(messages.every((m) => m.attempts >= 1 && m.attempts <= 3 && m.lastStatus === 404)).toBe(true);
      expect(messages[0]!.lastError).toMatch(/SERVICE_WEBHOOK_URL/);
      expect(s.emulator.events({ workspaceId })).toEqual([]);

      const view = (await s.api('GET', '/api/connection', undefined, domain)).body;
      expect(view).toMatchObject({
        status: 'connected',
        delivery_problem: { code: 'service_not_found', held: 3, message: expect.stringMatching(/SERVICE_WEBHOOK_URL/) },
      });
    });

    it('a re-probe while the address still answers 404 costs one request and holds it again; the operator hears of it once, as an error', async () => {
      s.emulator.injectFault({ mode: 'status404', count: 10_000, path: '/webhook/send' });
      const before = s.emulator.requests().filter((r) => r.workspaceId === workspaceId).length;
      expect(await s.app.reprobeHolds()).toEqual({ held: 1, probed: 1, released: 0 });
      await s.until(async () => (await held()).length === ids.length, 10_000, 'the probe held again');
      expect(s.emulator.requests().filter((r) => r.workspaceId === workspaceId).length).toBe(before + 1);
      // nothing due or in flight: the next round probes again
      expect(await s.app.reprobeHolds()).toEqual({ held: 1, probed: 1, released: 0 });
      await s.until(async () => (await held()).length === ids.length, 10_000, 'the probe held again');
      const errors = logs.lines
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .filter((l) => l.level >= 50 && /404/.test(l.msg));
      expect(errors).toHaveLength(1);
      expect(errors[0]!.msg).toMatch(/SERVICE_WEBHOOK_URL/);
    });

    it('once the address answers, the probe is delivered and the next round releases the rest: each delivered once', async () => {
      expect(await s.app.reprobeHolds()).toMatchObject({ held: 1, probed: 1 });
      await s.until(
        async () => (await s.app.db.outboxMessage.count({ where: { sourceId: { in: ids }, status: 'delivered' } })) === 1,
        10_000,
        'the probe delivered',
      );
      expect(await s.app.reprobeHolds()).toEqual({ held: 1, probed: 0, released: 1 });
      await s.until(() => s.emulator.events({ workspaceId }).length >= ids.length, 10_000, 'all delivered');
      expect(
        s.emulator
          .events({ workspaceId })
          .map((e) => e.event_attribute.source_id)
          .sort(),
      ).toEqual(ids);
      expect((await s.api('GET', '/api/connection', undefined, domain)).body.delivery_problem).toBeNull();
      expect(await s.app.reprobeHolds()).toEqual({ held: 0, probed: 0, released: 0 });
    });
  });

  it('the merchant’s Retry of one held message probes the address; once it is delivered the rest follow', async () => {
    const domain = 'answer-404-retry.myshopify.com';
    const ids = ['nfr-0', 'nfr-1'];
    const { workspaceId } = await s.connectShop(domain);
    s.emulator.injectFault({ mode: 'status404', count: 10_000, path: '/webhook/send' });
    for (const id of ids) await order(domain, id);
    await drive(
      async () =>
        (await s.app.db.outboxMessage.count({ where: { sourceId: { in: ids }, status: 'held', heldReason: 'service_not_found' } })) === 2,
    );
    s.emulator.clearFaults();
    const one = await messageOf(ids[0]!);
    expect((await s.api('POST', `/api/deliveries/${one.id}/retry`, undefined, domain)).status).toBe(202);
    await s.until(() => received(workspaceId, ids[0]!), 10_000, 'the retried message delivered');
    // the service has it; the re-probe reads the app's record of it, written just after
    await s.until(async () => (await messageOf(ids[0]!)).status === 'delivered', 10_000, 'the delivery recorded');
    expect(await s.app.reprobeHolds()).toMatchObject({ released: 1 });
    await s.until(() => received(workspaceId, ids[1]!), 10_000, 'the rest delivered');
    expect(s.emulator.events({ workspaceId })).toHaveLength(2);
  });

  it('at process start, deliveries held for a 404 go back to the queue (the address may have been fixed)', async () => {
    const domain = 'answer-404-restart.myshopify.com';
    const { workspaceId } = await s.connectShop(domain);
    s.emulator.injectFault({ mode: 'status404', count: 10_000, path: '/webhook/send' });
    await order(domain, 'nfs-0');
    await drive(async () => (await messageOf('nfs-0')).status === 'held');
    s.emulator.clearFaults();
    await new Promise((r) => setTimeout(r, 300));
    expect((await messageOf('nfs-0')).status).toBe('held');

    // another process starts on the same database, as after a redeploy with the address fixed
    const config = testConfig(s.database.url, {
      ROLE: 'worker',
      SHOPIFY_API_KEY: API_KEY,
      SHOPIFY_API_SECRET: API_SECRET,
      SERVICE_BASE_URL: s.emulator.url,
      SHOPIFY_ADMIN_ORIGIN: s.shop.url,
    });
    const started = await startServer(config, {
      logger: captureLogs('silent').logger,
      host: '127.0.0.1',
      now: clock.now,
      worker: { safetyPollMs: 250 },
    });
    try {
      await s.until(() => received(workspaceId, 'nfs-0'), 10_000, 'the held message delivered after the start');
      // the service has it; the app records the answer just after, on its own time
      await s.until(async () => (await messageOf('nfs-0')).status === 'delivered', 10_000, 'the delivery recorded');
      expect(await messageOf('nfs-0')).toMatchObject({ status: 'delivered', heldReason: null });
    } finally {
      await started.close();
    }
  });

  describe('contact delete (GDPR): a proxy’s answer never counts as done', () => {
    it.each<[string, FaultSpec['mode']]>([
      ['an HTML 404 page', 'proxy404'],
      ['200 with an HTML page', 'html200'],
    ])('%s: retried, then the contact is really deleted', async (_label, mode) => {
      const domain = `redact-${mode}.myshopify.com`;
      const { workspaceId } = await s.connectShop(domain);
      const c = sampleCustomer(9_200 + ++n);
      await s.shop.sendWebhook(s.app.url, { topic: 'customers/create', shopDomain: domain, payload: c, webhookId: `rc-${mode}` });
      await s.until(() => s.emulator.events({ workspaceId }).length >= 1, 10_000, 'the customer event');
      s.emulator.injectFault({ mode, count: 1, path: '/contact/delete' });
      await s.shop.sendWebhook(s.app.url, {
        topic: 'customers/redact',
        shopDomain: domain,
        webhookId: `rc-redact-${mode}`,
        payload: { shop_id: 1, shop_domain: domain, customer: { id: c.id, email: c.email, phone: null }, orders_to_redact: [] },
      });
      const shopId = (await s.app.db.shop.findUniqueOrThrow({ where: { domain } })).id;
      const del = () => s.app.db.outboxMessage.findFirstOrThrow({ where: { shopId, kind: 'contact_delete' } });
      await s.until(
        async () => {
          const m = await s.app.db.outboxMessage.findFirst({ where: { shopId, kind: 'contact_delete' } });
          return m && m.attempts >= 1 && m.status !== 'delivering';
        },
        10_000,
        'the first delete attempt',
      );
      expect(await del()).toMatchObject({ status: 'queued', attempts: 1 });
      expect(s.emulator.deletedContacts(workspaceId)).toEqual([]);
      await drive(async () => (await del()).status === 'delivered');
      expect(s.emulator.deletedContacts(workspaceId)).toEqual([c.email]);
    });
  });
});
