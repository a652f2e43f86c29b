// Delivery at app-store scale: the worker finds only shops with due work (whatever their number
// and ids), sleeps until the next due time without polling the queue, paces each send at the
// moment it leaves (a blocked event loop cannot bunch sends), and wakes across processes.
//
// Where a test shows that something happened by one path and not by a slower one (a timer, not a
// sweep; a wake-up, not a lease's expiry), the slower path is set to ten minutes: a delivery
// within the test's wait can only have come the fast way, whatever the machine's speed. How fast
// it comes is `npm run bench`'s figure (scale, latency). The limit is asserted on the pacer's
// own turns (test/helpers/turns.ts).
import { Metrics } from '../../src/observability/metrics';
import { createLogger } from '../../src/observability/logger';
import { createSecretBox } from '../../src/crypto/secret-box';
import { lowerDue, ShopQueue } from '../../src/outbox/due';
import { Pacer } from '../../src/outbox/pacer';
import { OutboxRepository } from '../../src/outbox/repository';
import { DeliveryWorker, type WorkerDeps } from '../../src/outbox/delivery/worker';
import { sampleOrder } from '../../sandbox/samples';
import { createServiceClient } from '../../src/integrations/service/client';
import { maxInWindow } from '../helpers/clock';
import { recordTurns, type TurnRecorder } from '../helpers/turns';
import { testConfig } from '../helpers/config';
import { testProvider } from '../helpers/db';
import { startEmulatorProcess, type EmulatorProcess } from '../helpers/emulator-process';
import { spawnApp, type AppProcess } from '../helpers/process';
import { startServer, type RunningServer } from '../../src/app/server';
import { API_KEY, API_SECRET, DEFAULT_SHOP, startStack, type Stack } from '../helpers/stack';
import { queueOrders } from '../faults/support';

/** Ten minutes: a path this slow is not what delivered anything within a test's wait. */
const NEVER_MS = 600_000;

/**
 * A delivery worker of the test's own on the stack's database (whose app runs ROLE=web, so this
 * is the only one delivering), built as server.ts builds one; `deps` replaces any part.
 */
function ownWorker(s: Stack, serviceUrl: string, deps: Partial<WorkerDeps> & Pick<WorkerDeps, 'client'>): DeliveryWorker {
  const config = testConfig(s.database.url, { SHOPIFY_API_KEY: API_KEY, SHOPIFY_API_SECRET: API_SECRET, SERVICE_BASE_URL: serviceUrl });
  return new DeliveryWorker({
    db: s.app.db,
    repo: new OutboxRepository(s.app.db, testProvider),
    queue: new ShopQueue(s.app.db, testProvider),
    pacer: new Pacer(s.app.db, testProvider),
    secrets: createSecretBox(config.encryption.key, []),
    metrics: new Metrics(),
    logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    requestTimeoutMs: config.service.timeoutMs,
    ...deps,
  });
}

/** The worker's own prepared statements a test counts the runs of, by the fields that lead to each. */
const STATEMENTS = {
  delivered: ['health', 'store', 'deliveredStatement'],
  context: ['contexts', 'statement'],
};

/**
 * Records each run of one of the worker's own prepared statements whose parameters name one of
 * `ids` (a message left by another test may be delivered too): what a test counts.
 */
function runsOf(worker: DeliveryWorker, statement: keyof typeof STATEMENTS, ids: string[]): unknown[][] {
  const st = STATEMENTS[statement].reduce((o, field) => (o as Record<string, unknown>)[field], worker as unknown) as {
    run: (p: unknown[]) => Promise<unknown[]>;
  };
  const run = st.run.bind(st);
  const runs: unknown[][] = [];
  st.run = (params) => {
    if (ids.some((id) => JSON.stringify(params).includes(id))) runs.push(params);
    return run(params);
  };
  return runs;
}

describe(`the worker finds only due work (${testProvider})`, () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(() => s.close());

  it('1,100 shops with future messages: a due message of the shop that sorts last by id is found at once, and no idle shop', async () => {
    const ws = await s.connectShop('zz-last.myshopify.com');
    const last = await s.app.db.shop.findUniqueOrThrow({ where: { domain: 'zz-last.myshopify.com' } });
    // 1,100 idle shops whose ids all sort before the connected one's
    const ids = Array.from({ length: 1100 }, (_, i) => `a${String(i).padStart(5, '0')}`);
    expect(ids.every((id) => id < last.id)).toBe(true);
    await s.app.db.shop.createMany({ data: ids.map((id) => ({ id, domain: `idle-${id}.myshopify.com` })) });
    await s.app.db.connection.createMany({
      data: ids.map((shopId) => ({
        shopId,
        status: 'connected',
        workspaceId: `idle-ws-${shopId}`,
        workspaceName: 'idle',
        apiKeyEnc: 'never-used',
        keyHint: '…idle',
      })),
    });
    const inAnHour = new Date(Date.now() + 3_600_000);
    for (let i = 0; i < ids.length; i += 500) {
      await s.app.db.outboxMessage.createMany({
        data: ids.slice(i, i + 500).map((shopId) => ({
          shopId,
          sourceId: `future-${shopId}`,
          topic: 'checkouts/create',
          eventName: 'checkout_abandoned',
          body: '{}',
          runAt: inAnHour,
          dueAt: inAnHour,
          email: 'idle@example.com',
        })),
      });
    }
    await lowerDue(
      s.app.db,
      testProvider,
      ids.map((shopId) => ({ shopId, runAt: inAnHour })),
    );
    // every shop the worker's discovery hands out from here on
    const leased: string[] = [];
    const lease = ShopQueue.prototype.lease;
    const spy = jest.spyOn(ShopQueue.prototype, 'lease').mockImplementation(async function (this: ShopQueue, ...args) {
      const shops = await lease.apply(this, args);
      leased.push(...shops.map((x) => x.shopId));
      return shops;
    });
    try {
      await s.webhook('orders/create', sampleOrder(1), { domain: 'zz-last.myshopify.com', webhookId: 'last-shop-order' });
      await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId }), 5_000, 'the last shop’s order');
    } finally {
      spy.mockRestore();
    }
    // discovery found the one shop with due work, and none of the 1,100 idle ones
    expect(leased).toContain(last.id);
    expect(leased.filter((id) => id !== last.id)).toEqual([]);
    // the idle shops were never served: nothing of theirs was claimed
    expect(await s.app.db.outboxMessage.count({ where: { sourceId: { startsWith: 'future-' }, attempts: { gt: 0 } } })).toBe(0);
  }, 60_000);
});

describe(`a worker's timing: its sleep and its lanes' ends (${testProvider})`, () => {
  let s: Stack;
  let worker: DeliveryWorker | undefined;
  beforeAll(async () => {
    // stage 1 only: the worker under test is the only one delivering
    s = await startStack({ env: { ROLE: 'web' } });
  });
  // each test runs a worker of its own: the one before must not deliver the next one's messages
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
  });
  afterAll(() => s.close());

  it('delivers a message due in 2 s by its own timer, with no claim query before it', async () => {
    const ws = await s.connectShop('timer.myshopify.com');
    const shop = await s.app.db.shop.findUniqueOrThrow({ where: { domain: 'timer.myshopify.com' } });
    const repo = new OutboxRepository(s.app.db, testProvider);
    const claims: number[] = [];
    const claim = repo.claim.bind(repo);
    repo.claim = (...args) => {
      claims.push(Date.now());
      return claim(...args);
    };
    const client = createServiceClient({
      baseUrl: s.emulator.url,
      webhookUrl: s.emulator.url,
      timeoutMs: 2000,
      logger: createLogger('silent'),
    });
    // no sweep and no safety poll within the test: only the timer set for the due time can wake it
    worker = ownWorker(s, s.emulator.url, { repo, client, tuning: { sweepEveryMs: NEVER_MS, safetyPollMs: NEVER_MS } });
    worker.start();
    await new Promise((r) => setTimeout(r, 300));
    const dueAt = new Date(Date.now() + 2_000);
    await queueOrders(s.app.db, shop, ['due-in-2s'], dueAt);
    // the insert's wake-up, as stage 2 publishes one: the worker learns the new due time
    worker.nudge();
    const [event] = await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId }), 15_000, 'the due message');
    expect(event!.event_attribute.source_id).toBe('due-in-2s');
    expect(claims.length).toBeGreaterThan(0);
    expect(claims.filter((t) => t < dueAt.getTime())).toEqual([]);
    await client.close();
  }, 30_000);

  it('serves a shop that falls due while a pass asks its two questions at once, not a sweep interval later', async () => {
    const ws = await s.connectShop('between.myshopify.com');
    const shop = await s.app.db.shop.findUniqueOrThrow({ where: { domain: 'between.myshopify.com' } });
    // the worker's clock stands still except while the lease query runs, which takes 50 ms of
    // it: the message falls due in the middle of that, so the pass's lease finds it not yet
    // due, and a next-wake question asked after the lease would find it no longer in the future
    const dueAt = Date.now() + 60_000;
    let t = dueAt - 25;
    const queue = new ShopQueue(s.app.db, testProvider);
    const lease = queue.lease.bind(queue);
    queue.lease = async (...args) => {
      const shops = await lease(...args);
      t += 50;
      return shops;
    };
    await queueOrders(s.app.db, shop, ['between-questions'], new Date(dueAt));
    const client = createServiceClient({
      baseUrl: s.emulator.url,
      webhookUrl: s.emulator.url,
      timeoutMs: 2000,
      logger: createLogger('silent'),
    });
    // the sweep interval is what it waited when the two questions had two different "now"s: ten
    // minutes here, so a delivery within the wait below came from the pass's own answer
    worker = ownWorker(s, s.emulator.url, {
      queue,
      now: () => new Date(t),
      client,
      tuning: { sweepEveryMs: NEVER_MS, safetyPollMs: NEVER_MS },
    });
    worker.start();
    await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId }), 10_000, 'the message');
    await client.close();
  }, 30_000);

  it('writes the last delivery of shops served together in one statement, clearing only errors older than it', async () => {
    const domains = Array.from({ length: 5 }, (_, i) => `last-${i}.myshopify.com`);
    for (const d of domains) await s.connectShop(d);
    const shops = await Promise.all(domains.map((domain) => s.app.db.shop.findUniqueOrThrow({ where: { domain } })));
    const ids = shops.map((x) => x.id);
    // an error newer than the deliveries to come (it must stay), and an older one (cleared)
    await s.app.db.connection.update({
      where: { shopId: ids[0]! },
      data: { lastError: 'newer', lastErrorAt: new Date(Date.now() + 60_000) },
    });
    await s.app.db.connection.update({
      where: { shopId: ids[1]! },
      data: { lastError: 'older', lastErrorAt: new Date(Date.now() - 60_000) },
    });
    const real = createServiceClient({
      baseUrl: s.emulator.url,
      webhookUrl: s.emulator.url,
      timeoutMs: 5000,
      logger: createLogger('silent'),
    });
    // the five sends leave together (or after 3 s, so a send that never comes cannot hold the
    // others forever), so their successes are noted within the same moment
    const gate: Array<() => void> = [];
    let opened = false;
    const open = () => {
      opened = true;
      gate.splice(0).forEach((go) => go());
    };
    const timer = setTimeout(open, 3_000);
    const client: typeof real = {
      ...real,
      sendEvent: async (apiKey, body, options) => {
        await new Promise<void>((r) => {
          gate.push(r);
          if (opened || gate.length === shops.length) open();
        });
        return real.sendEvent(apiKey, body, options);
      },
    };
    worker = ownWorker(s, s.emulator.url, { client });
    const writes = runsOf(worker, 'delivered', ids);
    for (const shop of shops) await queueOrders(s.app.db, shop, [`last-delivered-${shop.domain}`]);
    worker.start();
    const recorded = () => s.app.db.connection.findMany({ where: { shopId: { in: ids }, lastDeliveredAt: { not: null } } });
    await s.until(async () => (await recorded()).length === shops.length, 15_000, 'every shop’s last delivery');
    expect(writes.length).toBeLessThanOrEqual(2);
    const byShop = new Map((await recorded()).map((c) => [c.shopId, c]));
    expect(byShop.get(ids[0]!)!.lastError).toBe('newer');
    expect(byShop.get(ids[1]!)).toMatchObject({ lastError: null, lastErrorAt: null });
    clearTimeout(timer);
    await real.close();
  }, 30_000);

  it(`reads each lane's shop ${testProvider === 'postgres' ? "in the lease's own statement, with no read per lane" : 'once per lane'}, and holds a disconnected shop's messages`, async () => {
    const domains = ['ctx-0.myshopify.com', 'ctx-1.myshopify.com', 'ctx-2.myshopify.com'];
    const workspaces = [];
    for (const d of domains) workspaces.push(await s.connectShop(d));
    const shops = await Promise.all(domains.map((domain) => s.app.db.shop.findUniqueOrThrow({ where: { domain } })));
    // the third shop's key was removed: its message must wait, held, not be sent
    await s.app.db.connection.delete({ where: { shopId: shops[2]!.id } });
    const client = createServiceClient({
      baseUrl: s.emulator.url,
      webhookUrl: s.emulator.url,
      timeoutMs: 2000,
      logger: createLogger('silent'),
    });
    worker = ownWorker(s, s.emulator.url, { client });
    const reads = runsOf(
      worker,
      'context',
      shops.map((x) => x.id),
    );
    for (const shop of shops) await queueOrders(s.app.db, shop, [`context-${shop.domain}`]);
    worker.start();
    for (const ws of workspaces.slice(0, 2))
      await s.until(() => s.emulator.events({ workspaceId: ws.workspaceId }), 15_000, 'the connected shops’ orders');
    const held = () => s.app.db.outboxMessage.findFirst({ where: { shopId: shops[2]!.id, status: 'held', heldReason: 'disconnected' } });
    await s.until(held, 15_000, 'the disconnected shop’s order, held');
    expect(s.emulator.events({ workspaceId: workspaces[2]!.workspaceId })).toEqual([]);
    expect(reads).toHaveLength(testProvider === 'postgres' ? 0 : shops.length);
    await client.close();
  }, 30_000);

  it('lets its shop be served again at once when work arrives while it gives the lease back, not when the lease expires', async () => {
    const ws = await s.connectShop('ending.myshopify.com');
    const shop = await s.app.db.shop.findUniqueOrThrow({ where: { domain: 'ending.myshopify.com' } });
    const client = createServiceClient({
      baseUrl: s.emulator.url,
      webhookUrl: s.emulator.url,
      timeoutMs: 2000,
      logger: createLogger('silent'),
    });
    const queue = new ShopQueue(s.app.db, testProvider);
    // The moment after a lane's lease is released and before the lane is off the worker's list:
    // an order arrives for the shop and the worker looks for due work right then (as a wake-up
    // from stage 2 makes it do).
    let inTheGap: (() => Promise<void>) | undefined = async () => {
      await queueOrders(s.app.db, shop, ['second']);
      worker!.nudge();
      await new Promise((r) => setTimeout(r, 300));
    };
    const release = queue.release.bind(queue);
    queue.release = async (...args) => {
      const dueAt = await release(...args);
      const gap = inTheGap;
      inTheGap = undefined;
      await gap?.();
      return dueAt;
    };
    // a lease of ten minutes: the second order, delivered within the wait below, did not wait for it
    worker = ownWorker(s, s.emulator.url, { queue, client, tuning: { leaseMs: NEVER_MS, sweepEveryMs: NEVER_MS, safetyPollMs: NEVER_MS } });
    worker.start();
    await queueOrders(s.app.db, shop, ['first']);
    worker.nudge();
    await s.until(
      () => s.emulator.events({ workspaceId: ws.workspaceId }).find((e) => e.event_attribute.source_id === 'second'),
      15_000,
      'the second order',
    );
    expect(s.emulator.events({ workspaceId: ws.workspaceId }).map((e) => e.event_attribute.source_id)).toEqual(['first', 'second']);
    await client.close();
  }, 30_000);
});

describe(`pacing holds when the event loop is blocked (${testProvider})`, () => {
  let s: Stack;
  let emulator: EmulatorProcess;
  let turns: TurnRecorder;
  beforeAll(async () => {
    emulator = await startEmulatorProcess();
    s = await startStack({ env: { SERVICE_BASE_URL: emulator.url } });
    turns = recordTurns();
  });
  afterAll(async () => {
    turns.restore();
    await s.close();
    await emulator.close();
  });

  it('no 1-s window exceeds the limit, though the loop is blocked for 300 ms at a time while sends wait', async () => {
    const ws = await emulator.createWorkspace({ name: 'blocked loop', rateLimit: 10 });
    expect((await s.api('PUT', '/api/connection', { api_key: ws.apiKey })).status).toBe(200);
    const shop = await s.app.db.shop.findUniqueOrThrow({ where: { domain: DEFAULT_SHOP } });
    await queueOrders(
      s.app.db,
      shop,
      Array.from({ length: 40 }, (_, i) => `blocked-${i}`),
    );
    s.app.notifyQueued(shop.id);
    const started = Date.now();
    while (Date.now() - started < 4_000) {
      await new Promise((r) => setTimeout(r, 230));
      const until = Date.now() + 300;
      while (Date.now() < until) {
        // busy: the event loop is blocked, as a large synchronous parse would block it
      }
    }
    const deadline = Date.now() + 20_000;
    while ((await emulator.events(ws.id)).length < 40 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const sends = (await emulator.requests(ws.id)).filter((r) => r.path.includes('/webhook/send'));
    expect(new Set((await emulator.events(ws.id)).map((e) => e.event_attribute.source_id)).size).toBe(40);
    // when each request left, as the pacer was told: a send held up by the blocked loop moved the
    // ones after it (the emulator's 429s, stamped on a loaded machine's clock, are only printed)
    const departures = turns.departures(ws.id);
    console.log(
      `blocked loop: most sends in any 1 s, by the pacer ${maxInWindow(departures)}, at the emulator ${maxInWindow(sends.map((r) => r.at))}; 429s ${sends.filter((r) => r.status === 429).length}`,
    );
    expect(departures.length).toBeGreaterThanOrEqual(40);
    expect(maxInWindow(departures)).toBeLessThanOrEqual(10);
  }, 60_000);
});

describe(`a request that leaves late does not crowd the next ones (${testProvider})`, () => {
  let s: Stack;
  let emulator: EmulatorProcess;
  let worker: DeliveryWorker | undefined;
  let turns: TurnRecorder;
  beforeAll(async () => {
    emulator = await startEmulatorProcess();
    // stage 1 only: the worker under test is the only one delivering
    s = await startStack({ env: { ROLE: 'web', SERVICE_BASE_URL: emulator.url } });
    turns = recordTurns();
  });
  afterAll(async () => {
    turns.restore();
    await worker?.stop();
    await s.close();
    await emulator.close();
  });

  it('spaces the sends after one written 80 ms after its turn from when it really left: no second over the limit', async () => {
    const ws = await emulator.createWorkspace({ name: 'late writes', rateLimit: 10 });
    expect((await s.api('PUT', '/api/connection', { api_key: ws.apiKey })).status).toBe(200);
    const shop = await s.app.db.shop.findUniqueOrThrow({ where: { domain: DEFAULT_SHOP } });
    const real = createServiceClient({ baseUrl: emulator.url, webhookUrl: emulator.url, timeoutMs: 5000, logger: createLogger('silent') });
    // every fourth request is written 80 ms after its turn, as when a connection has to be
    // opened first while the event loop is busy: without spacing from the real write, the
    // request after it follows 24 ms later and ten later ones share its second
    let n = 0;
    const client: typeof real = {
      ...real,
      sendEvent: async (apiKey, body, options) => {
        if (++n % 4 === 0) await new Promise((r) => setTimeout(r, 80));
        return real.sendEvent(apiKey, body, options);
      },
    };
    const events: string[] = [];
    worker = ownWorker(s, emulator.url, { pacer: new Pacer(s.app.db, testProvider, { onEvent: (e) => events.push(e) }), client });
    await queueOrders(
      s.app.db,
      shop,
      Array.from({ length: 40 }, (_, i) => `late-write-${i}`),
    );
    worker.start();
    const deadline = Date.now() + 20_000;
    while ((await emulator.events(ws.id)).length < 40 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const sends = (await emulator.requests(ws.id)).filter((r) => r.path.includes('/webhook/send'));
    expect(new Set((await emulator.events(ws.id)).map((e) => e.event_attribute.source_id)).size).toBe(40);
    // when each request left, as the pacer was told: without the moves, ten sends after a late one
    // share its second (the emulator's 429s, stamped on a loaded machine's clock, are only printed)
    console.log(`late writes: 429s at the emulator ${sends.filter((r) => r.status === 429).length}`);
    const departures = turns.departures(ws.id);
    expect(departures.length).toBeGreaterThanOrEqual(40);
    expect(maxInWindow(departures)).toBeLessThanOrEqual(10);
    // each delayed request moved the next turn
    expect(events.filter((e) => e === 'moved').length).toBeGreaterThanOrEqual(10);
    await real.close();
  }, 60_000);
});

const pgOnly = testProvider === 'postgres' ? describe : describe.skip;
pgOnly('wake-ups across processes (PostgreSQL: LISTEN/NOTIFY)', () => {
  let s: Stack;
  let web: AppProcess | undefined;
  let worker: RunningServer | undefined;
  beforeAll(async () => {
    // this process installs and connects; the order goes through a web-only process
    s = await startStack({ env: { ROLE: 'web' } });
  });
  afterAll(async () => {
    await web?.kill('SIGTERM');
    await worker?.close();
    await s.close();
  });

  it('an order taken by a web-only process is delivered by a worker-only process woken by it', async () => {
    const ws = await s.connectShop('split.myshopify.com');
    web = await spawnApp({ ...s.childEnv(), ROLE: 'web' });
    // the worker's own passes are ten minutes apart: an order delivered within the waits below
    // reached it through the web process's NOTIFY
    worker = await startServer(
      testConfig(s.database.url, {
        SHOPIFY_API_KEY: API_KEY,
        SHOPIFY_API_SECRET: API_SECRET,
        SERVICE_BASE_URL: s.emulator.url,
        SHOPIFY_ADMIN_ORIGIN: s.shop.url,
        ROLE: 'worker',
      }),
      {
        logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
        host: '127.0.0.1',
        worker: { safetyPollMs: NEVER_MS, sweepEveryMs: NEVER_MS },
        processor: { safetyPollMs: NEVER_MS },
      },
    );
    // let the worker's listener connect and its first pass run
    await new Promise((r) => setTimeout(r, 1_000));
    for (let i = 0; i < 5; i++) {
      const res = await s.shop.sendWebhook(web.url, {
        topic: 'orders/create',
        shopDomain: 'split.myshopify.com',
        payload: sampleOrder(800 + i),
        webhookId: `split-${i}`,
      });
      expect(res.status).toBe(200);
      await s.until(
        () => s.emulator.events({ workspaceId: ws.workspaceId }).find((e) => e.event_attribute.source_id === `split-${i}`),
        10_000,
        `split-${i}`,
      );
    }
  }, 60_000);
});
