// GET /api/budget through the whole HTTP stack, on SQLite and PostgreSQL: the workspace's limit,
// per class what is due (and since when), scheduled, sent in the last hour, expired, and when it
// drains; each event's share of the last 7 days' sends; the two warnings; a workspace shared by
// two shops; and the per-class queue gauges of /metrics. The app runs as a web process (no
// worker), so the messages made here stay as they are, on a clock fixed 20 minutes into an hour.
import type { Prisma } from '@prisma/client';
import pg from 'pg';
import { testProvider } from '../helpers/db';
import { DEFAULT_SHOP, startStack, type Stack } from '../helpers/stack';

const HOUR = 3_600_000;
const T = new Date(Math.floor(Date.now() / HOUR) * HOUR + 20 * 60_000);
const THIS_HOUR = Math.floor(T.getTime() / HOUR) * HOUR;
const at = (offsetMs: number) => new Date(T.getTime() + offsetMs);
const SHOP_B = 'second-store.myshopify.com';
const SHOP_C = 'other-workspace.myshopify.com';
const SHOP_D = 'quiet-store.myshopify.com';

describe('GET /api/budget: the workspace’s delivery budget', () => {
  let s: Stack;
  let a: { shopId: string; apiKey: string; workspaceId: string };
  let b: string;
  let c: string;
  let n = 0;

  function messages(
    shopId: string,
    eventName: string,
    deliveryClass: number,
    count: number,
    o: { status?: string; dueAt: Date; runAt?: Date },
  ): Prisma.OutboxMessageCreateManyInput[] {
    return Array.from({ length: count }, () => ({
      shopId,
      sourceId: `budget-test:${++n}`,
      topic: 'test',
      eventName,
      deliveryClass,
      body: '{}',
      status: o.status ?? 'queued',
      dueAt: o.dueAt,
      runAt: o.runAt ?? o.dueAt,
    }));
  }
  const usage = (shopId: string, hourOffset: number, eventName: string, deliveryClass: number, sends: number, expired = 0) => ({
    shopId,
    hour: new Date(THIS_HOUR + hourOffset * HOUR),
    eventName,
    deliveryClass,
    sends,
    expired,
  });

  beforeAll(async () => {
    s = await startStack({ env: { ROLE: 'web' }, server: { now: () => T } });
    a = await s.connectShop(DEFAULT_SHOP);
    // a second shop connects with the same key: the same workspace, so the same budget
    s.shop.addShop({ domain: SHOP_B, id: '700101', name: 'Second store' });
    const joined = await s.api('PUT', '/api/connection', { api_key: a.apiKey }, SHOP_B);
    expect(joined.body.workspace_id).toBe(a.workspaceId);
    b = (await s.app.db.shop.findUniqueOrThrow({ where: { domain: SHOP_B } })).id;
    c = (await s.connectShop(SHOP_C)).shopId;
    await s.app.db.workspacePacer.upsert({
      where: { workspaceId: a.workspaceId },
      create: { workspaceId: a.workspaceId, limitPerSec: 5 },
      update: { limitPerSec: 5 },
    });

    await s.app.db.outboxMessage.createMany({
      data: [
        // critical, due: one retried (due 5 min ago, its retry due 5 s ago), two fresh; one scheduled
        ...messages(a.shopId, 'order_placed', 0, 1, { dueAt: at(-300_000), runAt: at(-5_000) }),
        ...messages(a.shopId, 'order_paid', 0, 1, { dueAt: at(-30_000) }),
        ...messages(a.shopId, 'connector_test', 0, 1, { dueAt: at(-10_000) }),
        ...messages(a.shopId, 'order_paid', 0, 1, { dueAt: at(600_000) }),
        // triggers: two due, one abandonment waiting for its delay
        ...messages(a.shopId, 'checkout_started', 1, 2, { dueAt: at(-20_000) }),
        ...messages(a.shopId, 'checkout_abandoned', 1, 1, { dueAt: at(50 * 60_000) }),
        ...messages(a.shopId, 'viewed_product', 2, 40, { dueAt: at(-120_000) }),
        ...messages(a.shopId, 'order_imported', 3, 100, { dueAt: at(-HOUR) }),
        // not waiting: counted nowhere
        ...messages(a.shopId, 'order_placed', 0, 5, { status: 'delivered', dueAt: at(-2 * HOUR) }),
        ...messages(a.shopId, 'order_paid', 0, 1, { status: 'dead', dueAt: at(-2 * HOUR) }),
        ...messages(a.shopId, 'viewed_product', 2, 3, { status: 'expired', dueAt: at(-30 * HOUR) }),
        ...messages(a.shopId, 'viewed_product', 2, 2, { status: 'held', dueAt: at(-60_000) }),
        // the other shop of the workspace
        ...messages(b, 'order_placed', 0, 1, { dueAt: at(-20_000) }),
        ...messages(b, 'added_to_cart', 2, 10, { dueAt: at(-60_000) }),
        // another workspace: never in this one's budget
        ...messages(c, 'order_placed', 0, 7, { dueAt: at(-900_000) }),
      ],
    });
    await s.app.db.deliveryUsage.createMany({
      data: [
        usage(a.shopId, 0, 'order_placed', 0, 30),
        usage(a.shopId, 0, 'viewed_product', 2, 200),
        usage(a.shopId, -1, 'order_placed', 0, 60),
        usage(a.shopId, -1, 'viewed_product', 2, 300, 12),
        usage(b, 0, 'viewed_product', 2, 100),
        usage(a.shopId, -72, 'added_to_cart', 2, 500),
        usage(a.shopId, -72, 'checkout_started', 1, 100, 4),
        // 25 hours ago: in the week, not in the last 24 hours
        usage(a.shopId, -25, 'order_placed', 0, 1000),
        // 8 days ago, and another workspace: in neither
        usage(a.shopId, -8 * 24, 'viewed_product', 2, 9999, 99),
        usage(c, 0, 'viewed_product', 2, 777, 7),
      ],
    });
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  it('answers the limit, and per class what is due, scheduled, sent, expired and when it drains, summed over the workspace', async () => {
    const res = await s.api('GET', '/api/budget');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ limit_per_sec: 5, shops_in_workspace: 2 });
    // due: [4, 2, 50, 100] at 5/s; floors 15 %, 10 %, 5 %; the previous hour counts for 2/3 at :20
    expect(res.body.classes).toEqual([
      {
        class: 'critical',
        floor: 0,
        max_age_s: null,
        sent_1h: 70,
        queued: 4,
        scheduled: 1,
        oldest_queued_age_s: 300,
        expired_24h: 0,
        drain_eta_s: 1,
      },
      {
        class: 'triggers',
        floor: 0.15,
        max_age_s: 86_400,
        sent_1h: 0,
        queued: 2,
        scheduled: 1,
        oldest_queued_age_s: 20,
        expired_24h: 0,
        drain_eta_s: 2,
      },
      {
        class: 'behaviour',
        floor: 0.1,
        max_age_s: 86_400,
        sent_1h: 500,
        queued: 50,
        scheduled: 0,
        oldest_queued_age_s: 120,
        expired_24h: 12,
        drain_eta_s: 12,
      },
      {
        class: 'history',
        floor: 0.05,
        max_age_s: null,
        sent_1h: 0,
        queued: 100,
        scheduled: 0,
        oldest_queued_age_s: 3600,
        expired_24h: 0,
        drain_eta_s: 32,
      },
    ]);
  });

  it('gives each event its sends, expiries and share of the workspace’s sends over the last 7 days, most sent first', async () => {
    const { events_7d: events } = (await s.api('GET', '/api/budget')).body;
    expect(events.map((e: { event_name: string }) => e.event_name)).toEqual([
      'order_placed',
      'viewed_product',
      'added_to_cart',
      'checkout_started',
    ]);
    const total = 1090 + 600 + 500 + 100;
    expect(events).toEqual([
      { event_name: 'order_placed', class: 'critical', sends: 1090, expired: 0, share: expect.closeTo(1090 / total, 4) },
      { event_name: 'viewed_product', class: 'behaviour', sends: 600, expired: 12, share: expect.closeTo(600 / total, 4) },
      { event_name: 'added_to_cart', class: 'behaviour', sends: 500, expired: 0, share: expect.closeTo(500 / total, 4) },
      { event_name: 'checkout_started', class: 'triggers', sends: 100, expired: 4, share: expect.closeTo(100 / total, 4) },
    ]);
  });

  it('warns that critical work waits and that storefront events expire, saying why and what helps', async () => {
    const { warnings } = (await s.api('GET', '/api/budget')).body;
    expect(warnings.map((w: { code: string }) => w.code)).toEqual(['critical_waiting', 'behaviour_expiring']);
    const [waiting, expiring] = warnings.map((w: { message: string }) => w.message) as [string, string];
    expect(waiting).toMatch(/^Critical events .* have waited 5 min to be sent: 4 are due/);
    expect(expiring).toMatch(/^12 storefront events expired unsent in the last 24 hours/);
    for (const m of [waiting, expiring]) {
      expect(m).toContain('5 requests a second, shared by the 2 shops of this workspace');
      // the noisiest events a merchant can switch off, by share; never a critical one
      expect(m).toContain('Viewed product, 26%; Added to cart, 22%; Checkout started, 4%');
      expect(m).not.toMatch(/Order placed/);
      expect(m).toMatch(/ask your email provider for a higher limit \(the app follows a raised limit by itself\)/);
    }
  });

  it('shows the other shop of the workspace the same budget', async () => {
    const fromA = (await s.api('GET', '/api/budget')).body;
    const fromB = await s.api('GET', '/api/budget', undefined, SHOP_B);
    expect(fromB.status).toBe(200);
    expect(fromB.body).toEqual(fromA);
  });

  it('keeps another workspace’s work and sends out, and warns of nothing when nothing waits or expired', async () => {
    const res = await s.api('GET', '/api/budget', undefined, SHOP_C);
    expect(res.body).toMatchObject({
      limit_per_sec: 10,
      shops_in_workspace: 1,
      events_7d: [{ event_name: 'viewed_product', sends: 777, expired: 7, share: 1 }],
    });
    expect(res.body.classes.map((x: { queued: number }) => x.queued)).toEqual([7, 0, 0, 0]);
    // its only expiries are behaviour's, its critical work 15 min old
    expect(res.body.warnings.map((w: { code: string }) => w.code)).toEqual(['critical_waiting', 'behaviour_expiring']);

    s.shop.addShop({ domain: SHOP_D, id: '700102', name: 'Quiet store' });
    const quiet = await s.api('GET', '/api/budget', undefined, SHOP_D);
    expect(quiet.status).toBe(200);
    expect(quiet.body).toMatchObject({ limit_per_sec: 10, shops_in_workspace: 1, events_7d: [], warnings: [] });
    expect(
      quiet.body.classes.every(
        (x: { queued: number; sent_1h: number; drain_eta_s: number }) => x.queued === 0 && x.sent_1h === 0 && x.drain_eta_s === 0,
      ),
    ).toBe(true);
  });

  it('does not warn about critical work due less than a minute ago, nor about expiries older than a day', async () => {
    const e = 'calm-store.myshopify.com';
    const { shopId } = await s.connectShop(e);
    await s.app.db.outboxMessage.createMany({ data: messages(shopId, 'order_placed', 0, 3, { dueAt: at(-45_000) }) });
    await s.app.db.deliveryUsage.createMany({
      data: [usage(shopId, -26, 'viewed_product', 2, 10, 5), usage(shopId, 0, 'order_placed', 0, 3)],
    });
    const res = await s.api('GET', '/api/budget', undefined, e);
    expect(res.body.classes[0]).toMatchObject({ queued: 3, oldest_queued_age_s: 45, drain_eta_s: 1 });
    expect(res.body.classes[2]).toMatchObject({ expired_24h: 0 });
    expect(res.body.warnings).toEqual([]);
  });

  it('warns of expiring workflow triggers too', async () => {
    const e = 'trigger-store.myshopify.com';
    const { shopId } = await s.connectShop(e);
    await s.app.db.deliveryUsage.createMany({ data: [usage(shopId, -2, 'cart_abandoned', 1, 40, 6)] });
    const { warnings } = (await s.api('GET', '/api/budget', undefined, e)).body;
    expect(warnings).toEqual([
      {
        code: 'behaviour_expiring',
        message: expect.stringMatching(/^6 workflow triggers expired unsent in the last 24 hours: .*Cart abandoned, 100%/),
      },
    ]);
  });

  it('needs a session token like every /api route', async () => {
    const res = await fetch(`${s.app.url}/api/budget`);
    expect(res.status).toBe(401);
  });

  it('exports per class, over every shop, what is due and since when, as gauges', async () => {
    const text = await (await fetch(`${s.app.url}/metrics`)).text();
    const gauge = (name: string, cls: string) => Number(new RegExp(`^${name}\\{class="${cls}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    // every shop: the workspace's [4, 2, 50, 100], the other workspace's 7 critical, the later tests' 3 critical
    expect(['critical', 'triggers', 'behaviour', 'history'].map((k) => gauge('connector_class_queued', k))).toEqual([14, 2, 50, 100]);
    expect(['critical', 'triggers', 'behaviour', 'history'].map((k) => gauge('connector_class_oldest_queued_age_seconds', k))).toEqual([
      900, 20, 120, 3600,
    ]);
  });

  (testProvider === 'postgres' ? it : it.skip)(
    'reads no shop’s message history: a few hundred index entries beside 10,000 delivered messages (PostgreSQL)',
    async () => {
      const history = Array.from({ length: 10 }, () =>
        messages(a.shopId, 'order_placed', 0, 1_000, { status: 'delivered', dueAt: at(-3 * HOUR) }),
      );
      for (const rows of history) await s.app.db.outboxMessage.createMany({ data: rows });
      // the test's own database: new connections plan with enable_seqscan off, so a read that no
      // index serves shows as a sequential scan, or as a full index scan reading the whole table
      const url = s.database.url;
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        await admin.query(`ALTER DATABASE "${new URL(url).pathname.slice(1)}" SET enable_seqscan = off`);
        await s.restart();
        // backends publish their counters when idle, within about 10 s
        const settled = () => new Promise((r) => setTimeout(r, 11_500));
        const stats = async () =>
          (
            await admin.query<{ relname: string; seq: string; read: string }>(`
        SELECT t.relname, t.seq_scan AS seq, t.seq_tup_read + COALESCE((SELECT SUM(i.idx_tup_read) FROM pg_stat_user_indexes i WHERE i.relid = t.relid), 0) AS read
        FROM pg_stat_user_tables t WHERE t.relname IN ('OutboxMessage', 'DeliveryUsage')`)
          ).rows;
        await settled();
        const before = await stats();
        expect((await s.api('GET', '/api/budget')).status).toBe(200);
        await settled();
        const after = await stats();
        const delta = (t: string, k: 'seq' | 'read') =>
          Number(after.find((r) => r.relname === t)![k]) - Number(before.find((r) => r.relname === t)![k]);
        expect({ outboxSeqScans: delta('OutboxMessage', 'seq'), usageSeqScans: delta('DeliveryUsage', 'seq') }).toEqual({
          outboxSeqScans: 0,
          usageSeqScans: 0,
        });
        // the workspace has 158 messages queued: counted twice (due, scheduled), and the heads of its queues read once
        expect(delta('OutboxMessage', 'read')).toBeGreaterThan(0);
        expect(delta('OutboxMessage', 'read')).toBeLessThan(1_000);
      } finally {
        await admin.end();
      }
    },
    90_000,
  );
});
