// The historical import end to end on small stores: the API, what is sent, re-runs, Shopify's
// failure modes, cancelling, GDPR, and live events going first at the real rate limit. Each
// scenario uses a shop (and workspace) of its own on one stack.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { graphqlOrder } from '../../../sandbox/fake-shop/bulk';
import { sampleOrder } from '../../../sandbox/samples';
import { testProvider } from '../../helpers/db';
import { receivedCounts, startBackfillStack, type BackfillStack } from './harness';

jest.setTimeout(60_000);

const IMPORTED = ['customer_imported', 'order_imported'];
const customerId = (n: number) => String(7_000_000_000_000 + n);
const orderId = (n: number) => String(5_000_000_000_000 + n);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe(`historical import (${testProvider})`, () => {
  let s: BackfillStack;
  beforeAll(async () => {
    s = await startBackfillStack({ emulator: { rateLimit: 500 } });
  });
  afterAll(() => s.close());

  /** Every scenario states its data; the rest is reset to defaults. */
  const data = (patch: Parameters<BackfillStack['bulk']['configure']>[0]) =>
    s.bulk.configure({
      customers: 0,
      orders: 0,
      phoneOnlyEvery: 0,
      orderSpanDays: 300,
      completeAfterMs: 100,
      webhookUrl: undefined,
      ...patch,
    });

  let shops = 0;
  async function shop(rateLimit = 500) {
    const domain = `import-${++shops}.myshopify.com`;
    const ws = await s.connectShop(domain, { rateLimit });
    const api = (method: string, body?: unknown) => s.api(method, '/api/backfill', body, domain);
    const status = async (check: (b: any) => boolean, timeoutMs = 20_000) => {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const b = (await api('GET')).body;
        if (check(b)) return b;
        if (Date.now() > end) throw new Error(`timed out; last status ${JSON.stringify(b)}`);
        await sleep(100);
      }
    };
    const start = async (body: unknown = {}) => {
      const res = await api('POST', body);
      expect(res.status).toBe(202);
      return res.body.backfill_id as string;
    };
    return { domain, ...ws, api, status, start, received: () => receivedCounts(s, ws.workspaceId, IMPORTED) };
  }

  it('imports customers and orders once, skips phone-only customers, and a second run sends nothing', async () => {
    data({ customers: 30, orders: 40, phoneOnlyEvery: 10 });
    const x = await shop();
    expect((await x.api('GET')).body).toMatchObject({ backfill_id: null, state: 'none', processed: 0, total: null, eta_s: null });
    const id = await x.start({ kinds: ['customers', 'orders'] });
    const done = await x.status((b) => b.state === 'completed' && b.delivered === b.queued);
    expect(done).toEqual({
      backfill_id: id,
      state: 'completed',
      kinds: ['customers', 'orders'],
      since: expect.any(String),
      processed: 70,
      total: 70,
      queued: 67,
      delivered: 67,
      skipped: 3,
      eta_s: 0,
      started_at: expect.any(String),
      finished_at: expect.any(String),
      error: null,
    });
    expect(x.received().size).toBe(67);
    expect([...x.received().values()].every((n) => n === 1)).toBe(true);
    const [order] = s.emulator
      .events({ workspaceId: x.workspaceId, eventName: 'order_imported' })
      .filter((e) => e.event_attribute.order_id === orderId(4));
    expect(order!.event_attribute).toMatchObject({
      historical: true,
      source_id: `import:order:${orderId(4)}`,
      order_name: '#1004',
      item_count: expect.any(Number),
    });
    const rows = await s.app.db.outboxMessage.findMany({ where: { backfillId: id } });
    expect(rows.every((r) => r.deliveryClass === 3)).toBe(true);

    const again = await x.start({});
    expect(again).not.toBe(id);
    expect(await x.status((b) => b.backfill_id === again && b.state === 'completed')).toMatchObject({
      processed: 70,
      queued: 0,
      delivered: 0,
    });
    await sleep(200);
    expect(x.received().size).toBe(67);
    expect([...x.received().values()].every((n) => n === 1)).toBe(true);
  });

  it('validates the request, answers 409 while one runs or without a connection, and 404 when nothing runs', async () => {
    data({ customers: 5, orders: 5, completeAfterMs: 60_000 });
    const x = await shop();
    const bad = async (body: unknown, message: RegExp) => {
      const res = await x.api('POST', body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(message) });
    };
    await bad({ since: 'yesterday' }, /since: must be an ISO 8601 date or "all"/);
    await bad({ kinds: [] }, /kinds: name at least one/);
    await bad({ kinds: ['products'] }, /kinds/);
    await bad({ kinds: ['orders', 'orders'] }, /must not repeat/);
    await bad({ since: '2999-01-01' }, /must not be in the future/);
    await bad({ since: 'all', extra: 1 }, /extra|unrecognized/i);
    expect((await x.api('DELETE')).status).toBe(404);

    const stranger = await s.api('POST', '/api/backfill', {}, 'not-connected.myshopify.com');
    expect(stranger.status).toBe(409);
    expect(stranger.body.error.code).toBe('not_connected');
    const unauth = await fetch(`${s.app.url}/api/backfill`);
    expect(unauth.status).toBe(401);

    const id = await x.start({ since: '2026-01-01', kinds: ['orders'] });
    const second = await x.api('POST', {});
    expect(second.status).toBe(409);
    expect(second.body.error).toMatchObject({ code: 'backfill_running', backfill_id: id });
    expect(await x.status((b) => b.state === 'running' && b.total !== null)).toMatchObject({
      kinds: ['orders'],
      since: '2026-01-01T00:00:00.000Z',
      total: 5,
    });
    await s.until(() => s.bulk.operations().some((o) => o.shop === x.domain), 5_000, 'bulk operation started');
    const cancelled = await x.api('DELETE');
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ backfill_id: id, state: 'cancelled', removed: 0, eta_s: null });
    // the runner stops the bulk operation it was waiting for
    await s.until(() => s.bulk.operations().some((o) => o.shop === x.domain && o.canceled), 5_000, 'bulk operation cancelled');
    expect((await x.api('DELETE')).status).toBe(404);
  });

  it('imports orders of the last year by default, and all of them with since "all"', async () => {
    // 20 orders spread over two years: the newest 11 are within a year
    data({ customers: 1, orders: 20, orderSpanDays: 730 });
    const x = await shop();
    await x.start({ kinds: ['orders'] });
    expect(await x.status((b) => b.state === 'completed')).toMatchObject({ total: 11, processed: 11, queued: 11 });
    await x.start({ kinds: ['orders'], since: 'all' });
    expect(await x.status((b) => b.state === 'completed' && b.total === 20)).toMatchObject({ processed: 20, queued: 9 });
    const ops = s.bulk.operations().filter((o) => o.shop === x.domain);
    expect(ops.map((o) => o.since === null)).toEqual([false, true]);
    expect(ops.every((o) => o.groupObjects)).toBe(true); // line items follow their order
    expect(Date.now() - ops[0]!.since!.getTime()).toBeGreaterThan(364 * 86_400_000);
  });

  it('uses the configured event names and does not import an order already sent live', async () => {
    data({ customers: 3, orders: 3 });
    const x = await shop();
    const settings = await s.api(
      'PUT',
      '/api/settings',
      { import_event_names: { customer_imported: 'old_customer', order_imported: 'old_order' } },
      x.domain,
    );
    expect(settings.status).toBe(200);
    // order 2 arrived live, as order_placed, before the import
    const live = { ...sampleOrder(2), created_at: graphqlOrder(2).order.createdAt };
    expect((await s.webhook('orders/create', live, { domain: x.domain, webhookId: 'live-order-2' })).status).toBe(200);
    await x.start();
    const done = await x.status((b) => b.state === 'completed' && b.delivered === b.queued);
    expect(done).toMatchObject({ processed: 6, queued: 5, skipped: 1 });
    const names = s.emulator
      .events({ workspaceId: x.workspaceId })
      .map((e) => `${e.event_name}:${e.event_attribute.order_id ?? e.event_attribute.customer_id}`)
      .sort();
    expect(names).toEqual(
      [
        ...[1, 2, 3].map((n) => `old_customer:${customerId(n)}`),
        `old_order:${orderId(1)}`,
        `old_order:${orderId(3)}`,
        `order_placed:${orderId(2)}`,
      ].sort(),
    );
  });

  it('runs a failed bulk operation again, and resumes a broken download where it stopped (HTTP Range)', async () => {
    // ~790 KB; the first checkpoint is after 500 customers (~330 KB), the second after 1,000 (~660 KB)
    data({ customers: 1_200, orders: 0 });
    const x = await shop();
    s.bulk.failNextOperation('INTERNAL_SERVER_ERROR');
    s.bulk.dropNextDownload(400_000);
    await x.start({ kinds: ['customers'] });
    // about 4 s alone; the wait allows for a machine the rest of the suite keeps busy
    await x.status((b) => b.state === 'completed' && b.delivered === 1_200, 60_000);
    const ops = s.bulk.operations().filter((o) => o.shop === x.domain);
    expect(ops.map((o) => o.failWith)).toEqual(['INTERNAL_SERVER_ERROR', null]);
    const downloads = s.bulk.downloads().filter((d) => d.operationId === ops[1]!.id);
    expect(downloads.map((d) => d.status)).toEqual([200, 206]);
    expect(downloads[0]!.bytesSent).toBe(400_000);
    expect(Number(/bytes=(\d+)-/.exec(downloads[1]!.range ?? '')?.[1])).toBeGreaterThan(0);
    expect(downloads[1]!.bytesSent).toBeLessThan(s.bulk.resultSize(ops[1]!.id));
    expect([...x.received().values()].every((n) => n === 1)).toBe(true);
    expect(x.received().size).toBe(1_200);
  }, 90_000);

  it('resumes by skipping lines when the server ignores Range, and re-runs the query when the result URL expires mid-read', async () => {
    data({ customers: 300, orders: 0 });
    const x = await shop();
    s.bulk.ignoreRange(true);
    s.bulk.dropNextDownload(40_000);
    await x.start({ kinds: ['customers'] });
    await x.status((b) => b.state === 'completed' && b.delivered === 300);
    s.bulk.ignoreRange(false);
    expect(x.received().size).toBe(300);
    expect([...x.received().values()].every((n) => n === 1)).toBe(true);

    // the result URL expires while the import is half read (it let go of the download while
    // the queue was full): the query runs again and nothing is sent twice
    data({ customers: 600, orders: 0 });
    const y = await shop(200);
    await s.backfill.runner.stop();
    const pausing = s.newRunner({ batchSize: 50, maxQueued: 100, holdOpenMs: 100 });
    await y.start({ kinds: ['customers'] });
    await y.status((b) => b.processed >= 100);
    s.bulk.expireResults();
    await y.status((b) => b.state === 'completed' && b.delivered === 600);
    const ops = s.bulk.operations().filter((o) => o.shop === y.domain);
    expect(ops).toHaveLength(2);
    expect(
      s.bulk
        .downloads()
        .filter((d) => d.operationId === ops[0]!.id)
        .map((d) => d.status),
    ).toContain(403);
    expect(y.received().size).toBe(600);
    expect([...y.received().values()].every((n) => n === 1)).toBe(true);
    expect((await y.api('GET')).body).toMatchObject({ processed: 600, total: 600, queued: 600 });
    await pausing.runner.stop();
    s.backfill.runner.start();
  });

  it('a runner that dies mid-import is taken over once its lease expires; nothing is lost or sent twice', async () => {
    data({ customers: 600, orders: 0 });
    const x = await shop(200);
    await s.backfill.runner.stop();
    // a small queue window: reading pauses, lets go of the download and reopens it with Range
    const doomed = s.newRunner({ batchSize: 50, maxQueued: 100, holdOpenMs: 200 });
    const id = await x.start({ kinds: ['customers'] });
    await x.status((b) => b.processed >= 150);
    await doomed.runner.crash();
    const row = await s.app.db.backfill.findUniqueOrThrow({ where: { id } });
    expect(row.state).toBe('running');
    expect(row.lockedBy).toBe(doomed.runner.runnerId);
    expect(row.processed).toBeLessThan(600);

    const [op] = s.bulk.operations().filter((o) => o.shop === x.domain);
    expect(s.bulk.downloads().filter((d) => d.operationId === op!.id && d.status === 206).length).toBeGreaterThan(0);
    const heir = s.newRunner();
    await x.status((b) => b.state === 'completed' && b.delivered === 600, 30_000);
    expect(x.received().size).toBe(600);
    expect([...x.received().values()].every((n) => n === 1)).toBe(true);
    await heir.runner.stop();
    s.backfill.runner.start();
  });

  it('waits while the service refuses the key, and continues once it is fixed', async () => {
    data({ customers: 40, orders: 0 });
    const x = await shop();
    await s.app.db.connection.update({ where: { shopId: x.shopId }, data: { status: 'invalid_key' } });
    await x.start({ kinds: ['customers'] });
    expect(await x.status((b) => b.error !== null)).toMatchObject({
      state: 'running',
      queued: 0,
      error: expect.stringMatching(/refused the API key/),
    });
    await s.app.db.connection.update({ where: { shopId: x.shopId }, data: { status: 'connected' } });
    expect(await x.status((b) => b.state === 'completed' && b.delivered === 40)).toMatchObject({ error: null });
  });

  it('customers/redact removes what the import queued for the customer; shop/redact removes the import itself', async () => {
    data({ customers: 20, orders: 20 });
    const x = await shop(1);
    const id = await x.start();
    await x.status((b) => b.state === 'completed');
    const of7 = { shopId: x.shopId, OR: [{ customerId: customerId(7) }, { orderId: orderId(7) }] };
    expect(await s.app.db.outboxMessage.count({ where: of7 })).toBe(2);
    const email = String((await s.app.db.outboxMessage.findFirstOrThrow({ where: { shopId: x.shopId, customerId: customerId(7) } })).email);
    const redact = {
      shop_id: 1,
      shop_domain: x.domain,
      customer: { id: Number(customerId(7)), email, phone: null },
      orders_to_redact: [Number(orderId(7))],
    };
    expect((await s.webhook('customers/redact', redact, { domain: x.domain })).status).toBe(200);
    expect(await s.app.db.outboxMessage.count({ where: of7 })).toBe(0);
    expect(await s.app.db.outboxMessage.count({ where: { shopId: x.shopId, body: { contains: email }, kind: 'event' } })).toBe(0);

    expect((await s.webhook('shop/redact', { shop_id: 1, shop_domain: x.domain }, { domain: x.domain })).status).toBe(200);
    expect(await s.app.db.backfill.count({ where: { id } })).toBe(0);
    expect(await s.app.db.outboxMessage.count({ where: { backfillId: id } })).toBe(0);
  });

  it('live orders go first at the real rate limit (10/s), and cancelling removes the queued import', async () => {
    data({ customers: 400, orders: 0 });
    const x = await shop(10);
    const id = await x.start({ kinds: ['customers'] });
    await s.until(() => s.emulator.events({ workspaceId: x.workspaceId }).length >= 10, 10_000, 'import delivering');
    // orders one after the other while the import keeps the lane busy: each, once stored by stage
    // 2 (when s.webhook returns), goes ahead of the import's queue. Counted in sends from then: at
    // most the batch the lane holds (3 at 10/s), one planned before the order was there, one
    // floor send and one in flight. Behind the import it would wait for hundreds. How long it
    // takes is `npm run bench -- priority`'s figure.
    const ahead: number[] = [];
    for (let i = 0; i < 10; i++) {
      const webhookId = `live-slow-${i}`;
      await s.webhook('orders/create', sampleOrder(800_000 + i), { domain: x.domain, webhookId });
      const from = s.emulator.events({ workspaceId: x.workspaceId }).length;
      await s.until(
        () =>
          s.emulator
            .events({ workspaceId: x.workspaceId, eventName: 'order_placed' })
            .some((e) => e.event_attribute.source_id === webhookId),
        10_000,
        webhookId,
      );
      // below 0 when the order went before the count was taken
      ahead.push(s.emulator.events({ workspaceId: x.workspaceId }).findIndex((e) => e.event_attribute.source_id === webhookId) - from);
    }
    process.stdout.write(`\n  live orders at 10/s during an import: import sends ahead of each ${ahead.join(', ')}\n`);
    expect(ahead.filter((n) => n > 2 * 3 + 2)).toEqual([]);

    const before = (await x.api('GET')).body;
    expect(before).toMatchObject({ state: 'completed', total: 400 });
    expect(before.eta_s).toBeGreaterThan(20);
    // read completely but still being sent: cancelling stops the sending
    const res = await x.api('DELETE');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ backfill_id: id, state: 'cancelled', eta_s: null });
    expect(res.body.removed).toBeGreaterThan(200);
    expect(res.body.queued + res.body.removed).toBe(400);
    const sentThen = x.received().size;
    await sleep(1_500);
    expect(x.received().size - sentThen).toBeLessThanOrEqual(10); // at most the batch in flight

    // an import still reading is cancelled with what it queued
    const y = await shop(5);
    await s.backfill.runner.stop();
    const slow = s.newRunner({ batchSize: 20, maxQueued: 40 });
    const yid = await y.start({ kinds: ['customers'] });
    await y.status((b) => b.queued >= 40);
    const cancelled = await y.api('DELETE');
    expect(cancelled.body).toMatchObject({ backfill_id: yid, state: 'cancelled' });
    expect(cancelled.body.removed).toBeGreaterThan(0);
    await sleep(300);
    expect(await s.app.db.outboxMessage.count({ where: { backfillId: yid, status: { in: ['queued', 'held'] } } })).toBe(0);
    await s.until(() => slow.runner.activeJobs === 0, 5_000, 'runner let go');
    const sent = y.received().size;
    await sleep(1_000);
    expect(y.received().size).toBeLessThanOrEqual(sent + 1); // at most the one in flight
    await slow.runner.stop();
    s.backfill.runner.start();
  });

  describe('the bulk_operations/finish webhook', () => {
    let receiver: Server;
    afterAll(() => new Promise<void>((r) => receiver.close(() => r())));

    it('wakes the import at once instead of waiting for the next poll', async () => {
      await s.backfill.runner.stop();
      // polls ten minutes apart: an import completed within the 15 s below was woken by the webhook
      const patient = s.newRunner({ opPollMs: [600_000, 600_000] });
      const calls: boolean[] = [];
      receiver = createServer((req, res) => {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', async () => {
          // what the intake will do for this topic
          calls.push(await patient.onBulkOperationFinish(String(req.headers['x-shopify-shop-domain']), JSON.parse(body)));
          res.end('ok');
        });
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
      data({
        customers: 10,
        orders: 10,
        completeAfterMs: 300,
        webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`,
      });
      const x = await shop();
      await x.start();
      await x.status((b) => b.state === 'completed', 15_000);
      expect(calls).toEqual([true, true]);
      expect(await patient.onBulkOperationFinish(x.domain, { admin_graphql_api_id: 'gid://shopify/BulkOperation/1' })).toBe(false);
      await patient.runner.stop();
    });
  });
});
