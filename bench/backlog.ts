// Backlog: 100,000 queued messages for one connected shop, inserted directly (createMany in
// batches of rows mapped exactly as the intake maps orders/create). At that depth: the time of
// the worker's two queries (OutboxRepository.claim and shopsWithQueuedWork, measured here with
// the app stopped), the intake rate while the backlog exists (autocannon, worker off), and the
// app's RSS, with the worker off under intake load and with the worker on, draining.
//
// This process uses Prisma, so it runs once per database (`--db both` re-runs itself).
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { startServiceEmulator } from '../src/sandbox/service-emulator';
import { connectShop, createBenchDatabase, eventLoopLag, fmt, heading, peakRss, percentile, providersFromArgs, sleep, startApp, startFakeShopFor, signedOrderRequests, table, type Provider } from './lib';
import { usePrismaFor } from './prisma-client';

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
  usePrismaFor(provider);
  // loaded only now, through the client chosen above
  const { createDb } = require('../src/db/client') as typeof import('../src/db/client');
  const { OutboxRepository } = require('../src/outbox/repository') as typeof import('../src/outbox/repository');
  const { mapWebhook } = require('../src/mapping') as typeof import('../src/mapping');
  const { DEFAULT_SETTINGS } = require('../src/settings/settings') as typeof import('../src/settings/settings');
  const { toRow } = require('../src/use-cases/store-messages') as typeof import('../src/use-cases/store-messages');
  const { sampleOrder } = require('../src/sandbox/samples') as typeof import('../src/sandbox/samples');

  const emulator = await startServiceEmulator({ host: '127.0.0.1' });
  const fake = await startFakeShopFor([SHOP]);
  const db = await createBenchDatabase(provider);
  const env = { SERVICE_BASE_URL: emulator.url, SHOPIFY_ADMIN_ORIGIN: fake.url };
  const prisma = await createDb(db.url, { poolSize: 4 });
  try {
    let app = await startApp(db, { ...env, WORKER_ENABLED: 'false' });
    const idleMb = app.memory().rssMb;
    await connectShop(app.url, fake, emulator, SHOP);
    await app.stop();
    const shop = await prisma.shop.findUniqueOrThrow({ where: { domain: SHOP } });

    // the backlog, mapped exactly as the intake would store orders/create
    const t0 = performance.now();
    const receivedAt = new Date();
    for (let i = 0; i < DEPTH; i += BATCH) {
      const rows = Array.from({ length: Math.min(BATCH, DEPTH - i) }, (_, k) => {
        const n = i + k;
        const [m] = mapWebhook({ topic: 'orders/create', payload: sampleOrder(n), webhookId: `backlog-${n}`, shopDomain: SHOP, receivedAt, settings: DEFAULT_SETTINGS }).messages;
        return toRow(m!, { shopId: shop.id, status: 'queued', heldReason: null });
      });
      await prisma.outboxMessage.createMany({ data: rows });
    }
    const insertS = (performance.now() - t0) / 1000;

    // the worker's two queries at this depth
    const repo = new OutboxRepository(prisma, provider);
    const scan = await timeIt(SAMPLES, () => repo.shopsWithQueuedWork());
    const claim = await timeIt(SAMPLES, async () => {
      const t = performance.now();
      const batch = await repo.claim(shop.id, 'bench', 3, new Date(), 30_000);
      const ms = performance.now() - t;
      if (batch.length !== 3) throw new Error(`claim returned ${batch.length} rows`);
      await repo.release(batch.map((m) => m.id), 'bench');
      return ms;
    });

    // intake while the backlog exists (worker off)
    app = await startApp(db, { ...env, WORKER_ENABLED: 'false' });
    await autocannon({ url: app.url, connections: 10, duration: 2, idReplacement: true, requests: signedOrderRequests(SHOP) });
    const intake = await peakRss(app, autocannon({ url: app.url, connections: 10, duration: INTAKE_S, idReplacement: true, requests: signedOrderRequests(SHOP) }));
    await app.stop();

    // the worker draining from the top of the backlog
    app = await startApp(db, env);
    const deliveredBefore = emulator.events().length;
    const scrape = await timeIt(5, () => eventLoopLag(app.url)); // /metrics counts the queue by status
    const drain = await peakRss(app, sleep(DRAIN_S * 1000));
    const drained = emulator.events().length - deliveredBefore;
    await app.stop();

    return [
      provider, DEPTH.toLocaleString('en-US'), fmt(DEPTH / insertS, 0),
      `${fmt(claim.p50, 1)} / ${fmt(claim.p99, 1)}`, `${fmt(scan.p50, 1)} / ${fmt(scan.p99, 1)}`,
      fmt(intake.value['2xx'] / INTAKE_S, 0), `${fmt(intake.value.latency.p50, 0)} / ${fmt(intake.value.latency.p99, 0)}`,
      fmt(idleMb, 0), fmt(intake.peakMb, 0), fmt(drain.peakMb, 0), fmt(drained / DRAIN_S, 1), fmt(scrape.p50, 0),
    ];
  } finally {
    await prisma.$disconnect();
    await db.drop();
    await Promise.all([emulator.close(), fake.close()]);
  }
}

const COLUMNS = [
  'database', 'queued', 'insert rows/s', 'claim p50 / p99 ms', 'shopsWithQueuedWork p50 / p99 ms', 'intake /s (worker off)', 'intake p50 / p99 ms',
  'RSS idle MB', 'RSS peak, intake MB', 'RSS peak, draining MB', 'drain /s', '/metrics scrape ms',
];

export async function runBacklog(): Promise<void> {
  const providers = await providersFromArgs();
  heading(
    `Backlog of ${DEPTH.toLocaleString('en-US')} queued messages`,
    `One connected shop; rows inserted with createMany (${BATCH} a batch). Claim (3 rows, then released) and shopsWithQueuedWork: ${SAMPLES} calls each from a separate client with the app stopped. Intake: autocannon, 10 connections, ${INTAKE_S} s, worker off. Draining: the app with its worker on for ${DRAIN_S} s at the real 10/s. RSS from /proc (target < 200 MB).`,
  );
  const rows: Array<Array<string | number>> = [];
  if (process.env.BENCH_BACKLOG_CHILD) {
    rows.push(await measure(providers[0]!));
    process.stdout.write(`BACKLOG_ROW ${JSON.stringify(rows[0])}\n`);
    return;
  }
  // one process per database: each needs the Prisma client of its own provider
  for (const provider of providers) {
    const res = spawnSync(process.execPath, ['--import', 'tsx', __filename, '--db', provider], { env: { ...process.env, BENCH_BACKLOG_CHILD: '1' }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const line = res.stdout.split('\n').find((l) => l.startsWith('BACKLOG_ROW '));
    if (res.status !== 0 || !line) throw new Error(`backlog benchmark on ${provider} failed (exit ${res.status}): ${res.stdout.slice(-2000)}`);
    rows.push(JSON.parse(line.slice('BACKLOG_ROW '.length)) as Array<string | number>);
  }
  console.log(table(COLUMNS, rows));
}

if (require.main === module) {
  runBacklog().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
