// Backlog: 100,000 queued messages for one connected shop, inserted directly (createMany in
// batches of rows mapped exactly as stage 2 maps orders/create, indexed as due). At that depth:
// the time of the worker's two queries (OutboxRepository.claim and the due-shop discovery,
// measured here with the app stopped), the app draining it (ROLE=all) with its RSS, and then
// the intake (ROLE=web, autocannon) while the backlog is still there.
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import {
  createBenchDatabase,
  eventLoopLag,
  fmt,
  heading,
  peakRss,
  percentile,
  providersFromArgs,
  runMain,
  seedShops,
  signedOrderRequests,
  sleep,
  startApp,
  startEmulator,
  table,
  withPrisma,
  type Provider,
} from './lib';

const SHOP = 'backlog-store.myshopify.com';
const DEPTH = Number(process.env.BENCH_BACKLOG_DEPTH ?? 100_000);
const BATCH = 1000;
const INTAKE_S = 10;
const DRAIN_S = 20;
const SAMPLES = 50;

/** Runs `fn` n times; the time of each is what fn returns (ms), or else its whole duration. */
async function timeIt(n: number, fn: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const own = await fn();
    times.push(typeof own === 'number' ? own : performance.now() - t);
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

async function measure(provider: Provider): Promise<Array<string | number>> {
  const { OutboxRepository } = await import('../src/outbox/repository');
  const { ShopQueue } = await import('../src/outbox/due');
  const { mapWebhook } = await import('../src/mapping');
  const { DEFAULT_SETTINGS } = await import('../src/settings/settings');
  const { toRow } = await import('../src/outbox/store-messages');
  const { sampleOrder } = await import('../sandbox/samples');

  const emulator = await startEmulator();
  const db = await createBenchDatabase(provider);
  const env = { SERVICE_BASE_URL: emulator.url };
  try {
    const [ws] = await emulator.createWorkspaces(1);
    const shopId = (await seedShops(db, [{ domain: SHOP, workspaceId: ws!.id, apiKey: ws!.apiKey }])).get(SHOP)!;

    const { insertS, claim, scan } = await withPrisma(db, async (prisma) => {
      // the backlog, mapped exactly as stage 2 stores orders/create
      const t0 = performance.now();
      const receivedAt = new Date();
      for (let i = 0; i < DEPTH; i += BATCH) {
        const rows = Array.from({ length: Math.min(BATCH, DEPTH - i) }, (_, k) => {
          const n = i + k;
          const [m] = mapWebhook({
            topic: 'orders/create',
            payload: sampleOrder(n),
            webhookId: `backlog-${n}`,
            shopDomain: SHOP,
            receivedAt,
            settings: DEFAULT_SETTINGS,
          }).messages;
          return toRow(m!, { shopId, status: 'queued', heldReason: null });
        });
        await prisma.outboxMessage.createMany({ data: rows });
      }
      const insertS = (performance.now() - t0) / 1000;
      // the worker's two queries at this depth
      const repo = new OutboxRepository(prisma, provider);
      const queue = new ShopQueue(prisma, provider);
      await queue.lower([{ shopId, runAt: receivedAt }]);
      const scan = await timeIt(SAMPLES, async () => {
        const t = performance.now();
        const leased = await queue.lease('bench', 10, new Date(), 30_000);
        const ms = performance.now() - t;
        if (leased.length !== 1) throw new Error(`discovery found ${leased.length} shops`);
        await queue.release(shopId, 'bench');
        return ms;
      });
      const claim = await timeIt(SAMPLES, async () => {
        const t = performance.now();
        const batch = await repo.claim(shopId, 'bench', [3, 0, 0, 0], new Date(), 30_000);
        const ms = performance.now() - t;
        if (batch.length !== 3) throw new Error(`claim returned ${batch.length} rows`);
        await repo.release(
          batch.map((m) => m.id),
          'bench',
        );
        return ms;
      });
      return { insertS, claim, scan };
    });

    // the worker draining from the top of the backlog
    let app = await startApp(db, env);
    const idleMb = app.memory().rssMb;
    const deliveredBefore = (await emulator.requests()).filter((r) => r.status === 200).length;
    const scrape = await timeIt(5, () => eventLoopLag(app.url)); // /metrics counts the queue by status
    const drain = await peakRss(app, sleep(DRAIN_S * 1000));
    const drained = (await emulator.requests()).filter((r) => r.status === 200).length - deliveredBefore;
    await app.stop();

    // stage 1 while the backlog exists (a web process)
    app = await startApp(db, { ...env, ROLE: 'web' });
    await autocannon({ url: app.url, connections: 10, duration: 2, idReplacement: true, requests: signedOrderRequests(SHOP) });
    const intake = await peakRss(
      app,
      autocannon({ url: app.url, connections: 10, duration: INTAKE_S, idReplacement: true, requests: signedOrderRequests(SHOP) }),
    );
    await app.stop();

    return [
      provider,
      DEPTH.toLocaleString('en-US'),
      fmt(DEPTH / insertS, 0),
      `${fmt(claim.p50, 1)} / ${fmt(claim.p99, 1)}`,
      `${fmt(scan.p50, 1)} / ${fmt(scan.p99, 1)}`,
      fmt(idleMb, 0),
      fmt(drain.peakMb, 0),
      fmt(drained / DRAIN_S, 1),
      fmt(scrape.p50, 0),
      fmt(intake.value['2xx'] / INTAKE_S, 0),
      `${fmt(intake.value.latency.p50, 0)} / ${fmt(intake.value.latency.p99, 0)}`,
      fmt(intake.peakMb, 0),
    ];
  } finally {
    await db.drop();
    await emulator.close();
  }
}

const COLUMNS = [
  'database',
  'queued',
  'insert rows/s',
  'claim p50 / p99 ms',
  'due-shop discovery p50 / p99 ms',
  'RSS at start MB',
  'RSS peak, draining MB',
  'drain /s (limit 10)',
  '/metrics scrape ms',
  'intake /s, 10 conns (web)',
  'intake p50 / p99 ms',
  'RSS peak, intake MB',
];

export async function runBacklog(): Promise<void> {
  const providers = await providersFromArgs();
  heading(
    `Backlog of ${DEPTH.toLocaleString('en-US')} queued messages`,
    `One connected shop; rows inserted with createMany (${BATCH} a batch). Claim (3 rows, then released) and due-shop discovery (lease + release): ${SAMPLES} calls each from a separate client with the app stopped. Draining: one app process (ROLE=all) for ${DRAIN_S} s at the real 10/s. Then intake: autocannon, 10 connections, ${INTAKE_S} s, into a ROLE=web process. RSS from /proc.`,
  );
  const rows: Array<Array<string | number>> = [];
  for (const provider of providers) rows.push(await measure(provider));
  console.log(table(COLUMNS, rows));
}

if (require.main === module) runMain(runBacklog);
