// Big orders: how long stage 2 holds the event loop while it processes orders/create webhooks of
// 10,000 line items (1.8 MB each), one alone and four in one batch. Stage 2 runs in this process
// (a ROLE=web server, drained by hand), nothing else runs beside it, and a setImmediate that
// reschedules itself marks every turn of the loop: the longest wall time between two turns (the
// longest a request, a timer or a socket read would wait), and the most CPU the process spent
// between two turns (the longest task's own cost, which a machine busy with other work stretches
// in wall time but not in CPU). test/integration/big-order.test.ts asserts where stage 2 cuts its
// work; this measures what the cuts leave.
import { createHmac } from 'node:crypto';
import { bigOrderBody } from '../test/helpers/big-order';
import { longestStallDuring } from '../test/helpers/loop';
import {
  API_KEY,
  API_SECRET,
  createBenchDatabase,
  ENCRYPTION_KEY,
  fmt,
  heading,
  percentile,
  providersFromArgs,
  runMain,
  seedShops,
  table,
  type Provider,
} from './lib';

const SHOP = 'bulk-stationery.myshopify.com';
const LINES = 10_000;
const ROUNDS = Number(process.env.BENCH_BIG_ORDER_ROUNDS ?? 5);
/** The target for the most CPU between two turns: one body's parse, the one step that cannot be cut, and little more. */
const TARGET_CPU_MS = 300;

async function post(url: string, body: string, webhookId: string): Promise<void> {
  const res = await fetch(`${url}/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-shopify-topic': 'orders/create',
      'x-shopify-shop-domain': SHOP,
      'x-shopify-api-version': '2026-10',
      'x-shopify-webhook-id': webhookId,
      'x-shopify-triggered-at': new Date().toISOString(),
      'x-shopify-hmac-sha256': createHmac('sha256', API_SECRET).update(body).digest('base64'),
    },
    body,
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`webhook ${webhookId} answered ${res.status}`);
}

interface Round {
  stallMs: number;
  cpuMs: number;
  turns: number;
}

async function measure(provider: Provider): Promise<Array<Array<string | number>>> {
  const { loadConfig } = await import('../src/config');
  const { startServer } = await import('../src/app/server');
  const { createLogger } = await import('../src/observability/logger');
  const db = await createBenchDatabase(provider);
  try {
    await seedShops(db, [{ domain: SHOP, workspaceId: 'bench-big-order', apiKey: 'sk_bench_big_order' }]);
    const config = loadConfig({
      NODE_ENV: 'test',
      SANDBOX: '1',
      PORT: '0',
      DATABASE_URL: db.url,
      SHOPIFY_API_KEY: API_KEY,
      SHOPIFY_API_SECRET: API_SECRET,
      ENCRYPTION_KEY,
      ROLE: 'web',
      LOG_LEVEL: 'warn',
    });
    const app = await startServer(config, { logger: createLogger('warn'), host: '127.0.0.1' });
    const rows: Array<Array<string | number>> = [];
    try {
      let n = 0;
      for (const batch of [1, 4]) {
        const rounds: Round[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          for (let i = 0; i < batch; i++) {
            n += 1;
            await post(app.url, bigOrderBody(LINES, { id: String(820982911946200000 + n) }), `bench-bulk-${n}`);
          }
          const { value, longestMs, longestCpuMs, turns } = await longestStallDuring(() => app.processor.drainAll());
          if (value !== batch) throw new Error(`stage 2 processed ${value} receipts, expected ${batch}`);
          rounds.push({ stallMs: longestMs, cpuMs: longestCpuMs, turns });
        }
        const of = (k: keyof Round) => rounds.map((x) => x[k]);
        const cpuMax = Math.max(...of('cpuMs'));
        rows.push([
          provider,
          batch === 1 ? 'one order' : `${batch} orders in one batch`,
          `${fmt(percentile(of('stallMs'), 50), 0)} / ${fmt(Math.max(...of('stallMs')), 0)}`,
          `${fmt(percentile(of('cpuMs'), 50), 0)} / ${fmt(cpuMax, 0)}${cpuMax < TARGET_CPU_MS ? '' : ' ✗'}`,
          `${Math.min(...of('turns'))}–${Math.max(...of('turns'))}`,
        ]);
      }
    } finally {
      await app.close();
    }
    return rows;
  } finally {
    await db.drop();
  }
}

const COLUMNS = [
  'database',
  'drained',
  'longest stall p50 / max ms',
  `most CPU between two turns p50 / max ms (target < ${TARGET_CPU_MS})`,
  'turns of the loop',
];

export async function runBigOrder(): Promise<void> {
  const providers = await providersFromArgs();
  heading(
    'Big orders in stage 2',
    `orders/create webhooks of ${LINES.toLocaleString('en-US')} line items (1.8 MB each), stored through POST /webhooks of a ROLE=web server in this process, then drained by stage 2 (processor.drainAll) alone: one order, then four in one batch, ${ROUNDS} rounds each (p50 / max over the rounds). A self-rescheduling setImmediate marks each turn of the event loop: the longest wall time between two turns, and the most CPU (user + system, the process's other threads included) between two turns.`,
  );
  const rows: Array<Array<string | number>> = [];
  for (const provider of providers) rows.push(...(await measure(provider)));
  console.log(table(COLUMNS, rows));
}

if (require.main === module) runMain(runBigOrder);
