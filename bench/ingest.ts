// Ingest: signed webhooks per second accepted by POST /webhooks, with p50/p99 latency, on
// SQLite and PostgreSQL, next to a bare express route that only verifies the HMAC. The load
// comes from autocannon in this process; each server is its own child process.
//
// What is sent: 200 distinct orders/create bodies (sampleOrder), signed once each and cycled;
// every request carries a fresh X-Shopify-Webhook-Id (autocannon's [<id>] replacement), so
// every request is a new webhook that the app verifies, dedupes, maps and stores (a receipt and
// an outbox message in one transaction) for a connected shop. The worker is off: this is the
// intake alone. The receipts stored are counted afterwards to confirm no request was a replay.
import autocannon from 'autocannon';
import { startServiceEmulator } from '../src/sandbox/service-emulator';
import { API_SECRET, connectShop, peakRss, signedOrderRequests, createBenchDatabase, fmt, heading, providersFromArgs, startApp, startChild, startFakeShopFor, table, type ChildServer } from './lib';

const SHOP = 'bench-store.myshopify.com';
const DURATION_S = Number(process.env.BENCH_INGEST_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_INGEST_CONNECTIONS ?? 10);
const BODIES = 200;

interface Measured {
  name: string;
  perSec: number;
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
  stored?: number;
  rssPeakMb: number;
  warmOk: number;
  okAll?: number;
}

async function load(url: string, seconds: number): Promise<autocannon.Result> {
  return autocannon({ url, connections: CONNECTIONS, duration: seconds, idReplacement: true, requests: signedOrderRequests(SHOP, BODIES) });
}

async function measure(name: string, server: ChildServer): Promise<Measured> {
  const warm = await load(server.url, 2); // warm-up: JIT, connection pools, SQLite page cache
  const { value: r, peakMb } = await peakRss(server, load(server.url, DURATION_S));
  return { name, perSec: r['2xx'] / DURATION_S, p50: r.latency.p50, p99: r.latency.p99, ok: r['2xx'], non2xx: r.non2xx, errors: r.errors + r.timeouts, rssPeakMb: peakMb, warmOk: warm['2xx'] };
}

export async function runIngest(): Promise<void> {
  const providers = await providersFromArgs();
  heading(
    'Ingest: signed webhooks accepted by POST /webhooks',
    `autocannon, ${CONNECTIONS} connections, ${DURATION_S} s after a 2 s warm-up, each server in its own process; ${BODIES} distinct signed orders/create bodies cycled, a fresh webhook id on every request; worker off.`,
  );
  const results: Measured[] = [];

  const bare = await startChild('bare-server.ts', { SHOPIFY_API_SECRET: API_SECRET }, 'bare');
  try {
    results.push(await measure('bare express route (HMAC only)', bare));
  } finally {
    await bare.stop();
  }

  const emulator = await startServiceEmulator({ host: '127.0.0.1' });
  const shop = await startFakeShopFor([SHOP]);
  try {
    for (const provider of providers) {
      const db = await createBenchDatabase(provider);
      const app = await startApp(db, { WORKER_ENABLED: 'false', SERVICE_BASE_URL: emulator.url, SHOPIFY_ADMIN_ORIGIN: shop.url });
      try {
        await connectShop(app.url, shop, emulator, SHOP);
        const before = await db.count('WebhookReceipt');
        const m = await measure(`connector on ${provider}`, app);
        m.stored = (await db.count('WebhookReceipt')) - before;
        m.okAll = m.ok + m.warmOk;
        results.push(m);
      } finally {
        await app.stop();
        await db.drop();
      }
    }
  } finally {
    await Promise.all([emulator.close(), shop.close()]);
  }

  const base = results[0]!;
  console.log(
    table(
      ['server', 'accepted/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors', 'ours ÷ bare (rate)', 'server RSS peak MB'],
      results.map((r) => [r.name, fmt(r.perSec, 0), fmt(r.p50, 0), fmt(r.p99, 0), r.non2xx, r.errors, r === base ? '1.000' : fmt(r.perSec / base.perSec, 3), fmt(r.rssPeakMb, 0)]),
    ),
  );
  const counted = results.filter((r) => r.stored !== undefined);
  if (counted.length) {
    console.log(
      `\nEvery request was a new webhook, not a replay: receipts stored (warm-up + measured run) against 2xx counted, ${counted.map((r) => `${r.name}: ${r.stored} stored, ${r.okAll} counted`).join('; ')}` +
        ` (the few more stored were in flight when a run ended: autocannon does not count those). Latency is autocannon's, in whole milliseconds.`,
    );
  }
}

if (require.main === module) {
  runIngest().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
