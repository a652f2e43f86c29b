// Pacing efficiency against the emulator at its real limit (10 requests/s per workspace):
// a backlog of 600 messages for one workspace, then 20 workspaces with 60 each at once.
// The backlog is queued through POST /webhooks with the worker off; then the app restarts with
// the worker on, and everything is measured from the emulator's own request log.
import { createHmac, randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { sampleOrder } from '../src/sandbox/samples';
import { startServiceEmulator, type RecordedRequest, type ServiceEmulator } from '../src/sandbox/service-emulator';
import { API_SECRET, connectShop, createBenchDatabase, eventLoopLag, fmt, heading, maxInWindow, providersFromArgs, sleep, startApp, startFakeShopFor, table, type BenchDatabase, type Provider } from './lib';

const LIMIT = 10;

async function queueOrders(appUrl: string, domain: string, count: number, offset: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const body = JSON.stringify(sampleOrder(offset + i));
      const res = await fetch(`${appUrl}/webhooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-shopify-topic': 'orders/create',
          'x-shopify-shop-domain': domain,
          'x-shopify-webhook-id': randomUUID(),
          'x-shopify-hmac-sha256': createHmac('sha256', API_SECRET).update(body).digest('base64'),
        },
        body,
      });
      if (res.status !== 200) throw new Error(`webhook refused: ${res.status} ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

interface Lane {
  workspaceId: string;
  sends: RecordedRequest[];
}

function laneStats(l: Lane) {
  const ok = l.sends.filter((r) => r.status === 200).map((r) => r.at).sort((a, b) => a - b);
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
  /** Event-loop delay of this process, which hosts the emulator (its clock decides 429s). */
  emulatorLag: { p99: number; max: number };
}

async function scenario(provider: Provider, emulator: ServiceEmulator, shops: number, perShop: number): Promise<Outcome> {
  const domains = Array.from({ length: shops }, (_, i) => `pace-${shops}-${i}.myshopify.com`);
  const fake = await startFakeShopFor(domains);
  const db: BenchDatabase = await createBenchDatabase(provider);
  const env = { SERVICE_BASE_URL: emulator.url, SHOPIFY_ADMIN_ORIGIN: fake.url };
  try {
    const intake = await startApp(db, { ...env, WORKER_ENABLED: 'false' });
    const lanes: Lane[] = [];
    try {
      for (const [i, d] of domains.entries()) {
        const ws = await connectShop(intake.url, fake, emulator, d);
        lanes.push({ workspaceId: ws.workspaceId, sends: [] });
        await queueOrders(intake.url, d, perShop, i * perShop);
      }
    } finally {
      await intake.stop();
    }
    const queued = await db.count('OutboxMessage', `"status" = 'queued'`);
    if (queued !== shops * perShop) throw new Error(`expected ${shops * perShop} queued messages, found ${queued}`);
    const app = await startApp(db, env);
    let cpu = NaN;
    let lag = { p99: NaN, max: NaN };
    const here = monitorEventLoopDelay({ resolution: 10 });
    try {
      await eventLoopLag(app.url); // resets the histogram: what follows is the drain's
      here.enable();
      const cpu0 = app.cpuSeconds();
      const t0 = Date.now();
      const deadline = Date.now() + (perShop / LIMIT) * 1000 * 2 + 30_000;
      const wanted = new Set(lanes.map((l) => l.workspaceId));
      for (;;) {
        const delivered = emulator.requests().filter((r) => r.status === 200 && r.path.includes('/webhook/send') && wanted.has(r.workspaceId ?? '')).length;
        if (delivered >= shops * perShop || Date.now() > deadline) break;
        await sleep(200);
      }
      cpu = (app.cpuSeconds() - cpu0) / ((Date.now() - t0) / 1000);
      lag = await eventLoopLag(app.url);
      here.disable();
    } finally {
      await app.stop();
    }
    const sends = emulator.requests().filter((r) => r.path.includes('/webhook/send'));
    for (const l of lanes) l.sends = sends.filter((r) => r.workspaceId === l.workspaceId);
    return { lanes: lanes.map(laneStats), cpu, lag, emulatorLag: { p99: here.percentile(99) / 1e6, max: here.max / 1e6 } };
  } finally {
    await db.drop();
    await fake.close();
  }
}

export async function runPacing(): Promise<void> {
  const providers = await providersFromArgs();
  heading(
    'Pacing efficiency at the real limit (10 requests/s per workspace)',
    'Backlog queued through POST /webhooks with the worker off, then drained by a fresh app process. Rates are (delivered − 1) ÷ (last − first accepted send), from the emulator\'s request log; "max in 1 s" is the most sends (any status) in any sliding one-second window.',
  );
  const one: Array<Array<string | number>> = [];
  const many: Array<Array<string | number>> = [];
  for (const provider of providers) {
    const emulator = await startServiceEmulator({ host: '127.0.0.1', rateLimit: LIMIT, maxRecordedRequests: 20_000 });
    try {
      const single = await scenario(provider, emulator, 1, 600);
      const a = single.lanes[0]!;
      one.push([provider, a.delivered, fmt(a.rate, 2), fmt(a.rate / LIMIT, 3), a.r429, a.maxWindow, fmt((a.last - a.first) / 1000, 1), `${fmt(single.cpu * 100, 0)}%`, `${fmt(single.lag.p99, 0)} / ${fmt(single.lag.max, 0)}`, `${fmt(single.emulatorLag.p99, 0)} / ${fmt(single.emulatorLag.max, 0)}`]);
      emulator.reset();
      const multi = await scenario(provider, emulator, 20, 60);
      const lanes = multi.lanes;
      const rates = lanes.map((l) => l.rate);
      const delivered = lanes.reduce((n, l) => n + l.delivered, 0);
      const spanS = (Math.max(...lanes.map((l) => l.last)) - Math.min(...lanes.map((l) => l.first))) / 1000;
      many.push([
        provider, delivered, fmt(delivered / spanS, 1), fmt(delivered / spanS / (20 * LIMIT), 3),
        `${fmt(Math.min(...rates), 2)} / ${fmt(Math.max(...rates), 2)}`, fmt(Math.min(...rates) / Math.max(...rates), 3),
        lanes.reduce((n, l) => n + l.r429, 0), Math.max(...lanes.map((l) => l.maxWindow)), fmt(spanS, 1),
        `${fmt(multi.cpu * 100, 0)}%`, `${fmt(multi.lag.p99, 0)} / ${fmt(multi.lag.max, 0)}`, `${fmt(multi.emulatorLag.p99, 0)} / ${fmt(multi.emulatorLag.max, 0)}`,
      ]);
    } finally {
      await emulator.close();
    }
  }
  console.log('One workspace, 600 queued messages (target: rate ÷ limit ≥ 0.95, no 429):\n');
  console.log(table(['database', 'delivered', 'rate /s', 'rate ÷ limit', '429s', 'max in 1 s', 'drain s', 'app CPU', 'app loop lag p99 / max ms', 'emulator loop lag p99 / max ms'], one));
  console.log('\nTwenty workspaces, 60 queued messages each, at once:\n');
  console.log(table(['database', 'delivered', 'aggregate /s', 'aggregate ÷ (20 × limit)', 'min / max per workspace /s', 'fairness min÷max', '429s', 'max in 1 s (any workspace)', 'drain s', 'app CPU', 'app loop lag p99 / max ms', 'emulator loop lag p99 / max ms'], many));
}

if (require.main === module) {
  runPacing().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
