// Pacing efficiency and fairness against the emulator at its real limit (10 requests/s per
// workspace): a backlog of 600 messages for one workspace, then 20 workspaces with 60 each at
// once. Delivery alone: the backlog is queued straight into the outbox, mapped as stage 2 maps
// orders/create and indexed as due (BENCH_PACING_QUEUE=webhooks stores it through POST /webhooks
// instead, so that stage 2 runs during the drain); then one fresh ROLE=all process drains it,
// and everything is measured from the emulator's own request log. The emulator runs in a
// process of its own, so its clock is not delayed by this one.
import { randomUUID } from 'node:crypto';
import {
  createBenchDatabase,
  eventLoopLag,
  fmt,
  heading,
  maxInWindow,
  pacerEvents,
  postOrder,
  providersFromArgs,
  runMain,
  seedShops,
  sleep,
  startApp,
  startEmulator,
  table,
  withPrisma,
  type BenchDatabase,
  type EmulatorRequest,
  type Provider,
  type RemoteEmulator,
} from './lib';

const LIMIT = 10;
const VIA_WEBHOOKS = process.env.BENCH_PACING_QUEUE === 'webhooks';

/** Queued messages, as stage 2 stores orders/create, indexed as due. */
async function queueMessages(db: BenchDatabase, shops: Array<{ id: string; domain: string }>, perShop: number): Promise<void> {
  const { mapWebhook } = await import('../src/mapping');
  const { DEFAULT_SETTINGS } = await import('../src/settings/settings');
  const { toRow } = await import('../src/outbox/store-messages');
  const { lowerDue } = await import('../src/outbox/due');
  const { sampleOrder } = await import('../sandbox/samples');
  const now = new Date();
  await withPrisma(db, async (prisma) => {
    for (const [s, shop] of shops.entries()) {
      const rows = Array.from({ length: perShop }, (_, i) => {
        const n = s * perShop + i;
        const [m] = mapWebhook({
          topic: 'orders/create',
          payload: sampleOrder(n),
          webhookId: randomUUID(),
          shopDomain: shop.domain,
          receivedAt: now,
          settings: DEFAULT_SETTINGS,
        }).messages;
        return toRow(m!, { shopId: shop.id, status: 'queued', heldReason: null });
      });
      await prisma.outboxMessage.createMany({ data: rows });
    }
    await lowerDue(
      prisma,
      db.provider,
      shops.map((s) => ({ shopId: s.id, runAt: now })),
    );
  });
}

async function queueOrders(appUrl: string, domain: string, count: number, offset: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const status = await postOrder(appUrl, domain, offset + i, randomUUID());
      if (status !== 200) throw new Error(`webhook refused: ${status}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

interface Lane {
  workspaceId: string;
  sends: EmulatorRequest[];
}

function laneStats(l: Lane) {
  const ok = l.sends
    .filter((r) => r.status === 200)
    .map((r) => r.at)
    .sort((a, b) => a - b);
  const spanS = ok.length > 1 ? (ok[ok.length - 1]! - ok[0]!) / 1000 : NaN;
  return {
    delivered: ok.length,
    first: ok[0] ?? NaN,
    last: ok[ok.length - 1] ?? NaN,
    rate: (ok.length - 1) / spanS,
    r429: l.sends.filter((r) => r.status === 429).length,
    maxWindow: maxInWindow(l.sends.map((r) => r.at)),
  };
}

interface Outcome {
  lanes: ReturnType<typeof laneStats>[];
  /** The app's CPU use during the drain, as a share of one core. */
  cpu: number;
  lag: { p99: number; max: number };
  /** The emulator's own event-loop delay during the drain (its clock decides 429s). */
  emulatorLag: { p99: number; max: number };
  /** The pacer's own account (connector_pacer_events_total): slots used, given up late, slow-downs. */
  pacer: Record<string, number>;
}

async function scenario(provider: Provider, emulator: RemoteEmulator, shops: number, perShop: number): Promise<Outcome> {
  const domains = Array.from({ length: shops }, (_, i) => `pace-${shops}-${i}.myshopify.com`);
  const db = await createBenchDatabase(provider);
  const env = { SERVICE_BASE_URL: emulator.url };
  try {
    const ws = await emulator.createWorkspaces(shops, LIMIT);
    const ids = await seedShops(
      db,
      domains.map((domain, i) => ({ domain, workspaceId: ws[i]!.id, apiKey: ws[i]!.apiKey })),
    );
    const lanes: Lane[] = ws.map((w) => ({ workspaceId: w.id, sends: [] }));
    if (VIA_WEBHOOKS) {
      const intake = await startApp(db, { ...env, ROLE: 'web' });
      try {
        for (const [i, d] of domains.entries()) await queueOrders(intake.url, d, perShop, i * perShop);
      } finally {
        await intake.stop();
      }
      const stored = await db.count('WebhookReceipt', '"processedAt" IS NULL');
      if (stored !== shops * perShop) throw new Error(`expected ${shops * perShop} stored receipts, found ${stored}`);
    } else {
      await queueMessages(
        db,
        domains.map((domain) => ({ id: ids.get(domain)!, domain })),
        perShop,
      );
      const queued = await db.count('OutboxMessage', `"status" = 'queued'`);
      if (queued !== shops * perShop) throw new Error(`expected ${shops * perShop} queued messages, found ${queued}`);
    }
    const app = await startApp(db, env);
    let cpu = NaN;
    let lag = { p99: NaN, max: NaN };
    let emulatorLag = { p99: NaN, max: NaN };
    let pacer: Record<string, number> = {};
    try {
      await eventLoopLag(app.url); // resets the histogram: what follows is the drain's
      await emulator.loopLag();
      const cpu0 = app.cpuSeconds();
      const t0 = Date.now();
      const deadline = Date.now() + (perShop / LIMIT) * 1000 * 2 + 30_000;
      const wanted = lanes.map((l) => l.workspaceId);
      for (;;) {
        const delivered = (await emulator.requests(wanted)).filter((r) => r.status === 200 && r.path.includes('/webhook/send')).length;
        if (delivered >= shops * perShop || Date.now() > deadline) break;
        await sleep(250);
      }
      cpu = (app.cpuSeconds() - cpu0) / ((Date.now() - t0) / 1000);
      lag = await eventLoopLag(app.url);
      emulatorLag = await emulator.loopLag();
      pacer = await pacerEvents(app.url);
    } finally {
      await app.stop();
    }
    const sends = (await emulator.requests(lanes.map((l) => l.workspaceId))).filter((r) => r.path.includes('/webhook/send'));
    for (const l of lanes) l.sends = sends.filter((r) => r.workspaceId === l.workspaceId);
    return { lanes: lanes.map(laneStats), cpu, lag, emulatorLag, pacer };
  } finally {
    await db.drop();
  }
}

/** Turns sent / moved after a late answer or write / given up late / slowed for others' usage, as the app's pacer counted them. */
const pacerCell = (o: Outcome) => `${o.pacer.sent ?? 0} / ${o.pacer.moved ?? 0} / ${o.pacer.late ?? 0} / ${o.pacer.slowed ?? 0}`;

export async function runPacing(): Promise<void> {
  const providers = await providersFromArgs();
  heading(
    'Pacing efficiency and fairness at the real limit (10 requests/s per workspace)',
    `${VIA_WEBHOOKS ? 'Backlog stored through POST /webhooks by a ROLE=web process, then processed (stage 2) and drained by one fresh ROLE=all process' : 'Delivery alone: the backlog is queued straight into the outbox (mapped as stage 2 maps orders/create, indexed as due), then drained by one fresh ROLE=all process'}. Rates are (delivered − 1) ÷ (last − first accepted send), from the emulator's request log; "max in 1 s" is the most sends (any status) in any sliding one-second window. The emulator runs in a process of its own.`,
  );
  const one: Array<Array<string | number>> = [];
  const many: Array<Array<string | number>> = [];
  for (const provider of providers) {
    const emulator = await startEmulator({ rateLimit: LIMIT });
    try {
      const single = await scenario(provider, emulator, 1, 600);
      const a = single.lanes[0]!;
      one.push([
        provider,
        a.delivered,
        fmt(a.rate, 2),
        fmt(a.rate / LIMIT, 3),
        a.r429,
        `${a.maxWindow} (limit ${LIMIT})`,
        fmt((a.last - a.first) / 1000, 1),
        `${fmt(single.cpu * 100, 0)}%`,
        `${fmt(single.lag.p99, 0)} / ${fmt(single.lag.max, 0)}`,
        `${fmt(single.emulatorLag.p99, 0)} / ${fmt(single.emulatorLag.max, 0)}`,
        pacerCell(single),
      ]);
      await emulator.reset();
      const multi = await scenario(provider, emulator, 20, 60);
      const lanes = multi.lanes;
      const rates = lanes.map((l) => l.rate);
      const delivered = lanes.reduce((n, l) => n + l.delivered, 0);
      const spanS = (Math.max(...lanes.map((l) => l.last)) - Math.min(...lanes.map((l) => l.first))) / 1000;
      many.push([
        provider,
        delivered,
        fmt(delivered / spanS, 1),
        fmt(delivered / spanS / (20 * LIMIT), 3),
        `${fmt(Math.min(...rates), 2)} / ${fmt(Math.max(...rates), 2)}`,
        fmt(Math.min(...rates) / Math.max(...rates), 3),
        lanes.reduce((n, l) => n + l.r429, 0),
        `${Math.max(...lanes.map((l) => l.maxWindow))} (limit ${LIMIT})`,
        fmt(spanS, 1),
        `${fmt(multi.cpu * 100, 0)}%`,
        `${fmt(multi.lag.p99, 0)} / ${fmt(multi.lag.max, 0)}`,
        `${fmt(multi.emulatorLag.p99, 0)} / ${fmt(multi.emulatorLag.max, 0)}`,
        pacerCell(multi),
      ]);
    } finally {
      await emulator.close();
    }
  }
  console.log('One workspace, 600 queued messages (target: rate ÷ limit ≥ 0.95, no 429):\n');
  console.log(
    table(
      [
        'database',
        'delivered',
        'rate /s',
        'rate ÷ limit',
        '429s',
        'max in 1 s',
        'drain s',
        'app CPU',
        'app loop lag p99 / max ms',
        'emulator loop lag p99 / max ms',
        'pacer: sent / moved / late / slowed',
      ],
      one,
    ),
  );
  console.log('\nTwenty workspaces, 60 queued messages each, at once (fairness target ≥ 0.9):\n');
  console.log(
    table(
      [
        'database',
        'delivered',
        'aggregate /s',
        'aggregate ÷ (20 × limit)',
        'min / max per workspace /s',
        'fairness min÷max',
        '429s',
        'max in 1 s (any workspace)',
        'drain s',
        'app CPU',
        'app loop lag p99 / max ms',
        'emulator loop lag p99 / max ms',
        'pacer: sent / moved / late / slowed',
      ],
      many,
    ),
  );
}

if (require.main === module) runMain(runPacing);
