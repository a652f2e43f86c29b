// End-to-end latency below the rate limit: from the moment POST /webhooks answered 200 to the
// moment the emulator accepted the event (its receivedAt), for 10 shops each sending 5 orders a
// second (half their workspace's 10/s) for 20 s. The sender and the emulator share this
// process's clock; the app is its own process.
import { createHmac, randomUUID } from 'node:crypto';
import { sampleOrder } from '../src/sandbox/samples';
import { startServiceEmulator } from '../src/sandbox/service-emulator';
import { API_SECRET, connectShop, createBenchDatabase, fmt, heading, percentile, providersFromArgs, sleep, startApp, startFakeShopFor, table } from './lib';

const SHOPS = 10;
const PER_SHOP_PER_S = 5;
const SECONDS = Number(process.env.BENCH_LATENCY_SECONDS ?? 20);

export async function runLatency(): Promise<void> {
  const providers = await providersFromArgs();
  heading(
    'End-to-end latency below the rate limit',
    `${SHOPS} shops, each with its own workspace (limit 10/s), each sending ${PER_SHOP_PER_S} orders/create a second for ${SECONDS} s; latency = emulator receivedAt − the moment POST /webhooks answered 200.`,
  );
  const rows: Array<Array<string | number>> = [];
  for (const provider of providers) {
    const domains = Array.from({ length: SHOPS }, (_, i) => `latency-${i}.myshopify.com`);
    const emulator = await startServiceEmulator({ host: '127.0.0.1', maxRecordedRequests: 20_000 });
    const fake = await startFakeShopFor(domains);
    const db = await createBenchDatabase(provider);
    const app = await startApp(db, { SERVICE_BASE_URL: emulator.url, SHOPIFY_ADMIN_ORIGIN: fake.url });
    try {
      for (const d of domains) await connectShop(app.url, fake, emulator, d);
      const acceptedAt = new Map<string, number>();
      let refused = 0;
      const t0 = Date.now() + 200;
      const intervalMs = 1000 / PER_SHOP_PER_S;
      const senders = domains.map(async (domain, s) => {
        for (let k = 0; k < SECONDS * PER_SHOP_PER_S; k++) {
          // spread the shops over the interval, so the app sees a steady stream
          await sleep(t0 + k * intervalMs + (s * intervalMs) / SHOPS - Date.now());
          const id = randomUUID();
          const body = JSON.stringify(sampleOrder(s * 10_000 + k));
          const res = await fetch(`${app.url}/webhooks`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-shopify-topic': 'orders/create',
              'x-shopify-shop-domain': domain,
              'x-shopify-webhook-id': id,
              'x-shopify-hmac-sha256': createHmac('sha256', API_SECRET).update(body).digest('base64'),
            },
            body,
          });
          await res.arrayBuffer();
          if (res.status === 200) acceptedAt.set(id, Date.now());
          else refused += 1;
        }
      });
      await Promise.all(senders);
      const end = Date.now() + 30_000;
      while (Date.now() < end) {
        const got = emulator.events().filter((e) => acceptedAt.has(String(e.event_attribute.source_id))).length;
        if (got >= acceptedAt.size) break;
        await sleep(200);
      }
      const latencies: number[] = [];
      for (const e of emulator.events()) {
        const at = acceptedAt.get(String(e.event_attribute.source_id));
        if (at !== undefined) latencies.push(e.receivedAt - at);
      }
      const r429 = emulator.requests().filter((r) => r.status === 429).length;
      rows.push([provider, acceptedAt.size, latencies.length, refused, r429, fmt(percentile(latencies, 50), 0), fmt(percentile(latencies, 95), 0), fmt(percentile(latencies, 99), 0), fmt(Math.max(...latencies), 0)]);
    } finally {
      await app.stop();
      await db.drop();
      await Promise.all([emulator.close(), fake.close()]);
    }
  }
  console.log(table(['database', 'webhooks accepted', 'events received', 'webhooks refused', '429s', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms'], rows));
}

if (require.main === module) {
  runLatency().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
