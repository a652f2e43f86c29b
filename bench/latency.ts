// End to end below the rate limit (an idle workspace): from the moment a webhook is sent to
// POST /webhooks to the moment the service accepted its event (the emulator's receivedAt), for
// 10 shops each sending 5 orders/create a second (half their workspace's 10/s) for 20 s, through
// one app process (ROLE=all: stage 1, stage 2 and delivery). The emulator runs in a process of
// its own; both clocks are this machine's wall clock.
// The measured run follows a warm-up of the same load (BENCH_LATENCY_WARMUP_SECONDS, default 5),
// reported on its own: without it, the p99 would measure the app's first moments after start
// (its code not yet optimised, each connection preparing its statements) rather than its steady
// state. The first orders after a start are what scale's cold column measures.
import { randomBytes } from 'node:crypto';
import {
  createBenchDatabase,
  stageBreakdown,
  EventLog,
  fmt,
  heading,
  percentile,
  postOrder,
  providersFromArgs,
  runMain,
  seedShops,
  sleep,
  startApp,
  startEmulator,
  table,
} from './lib';

const SHOPS = Number(process.env.BENCH_LATENCY_SHOPS ?? 10);
const PER_SHOP_PER_S = 5;
const SECONDS = Number(process.env.BENCH_LATENCY_SECONDS ?? 20);
const WARMUP_S = Number(process.env.BENCH_LATENCY_WARMUP_SECONDS ?? 5);

export async function runLatency(): Promise<void> {
  const providers = await providersFromArgs();
  heading(
    'End to end: webhook → service-accepted, below the rate limit',
    `${SHOPS} shops, each with its own workspace (limit 10/s), each sending ${PER_SHOP_PER_S} orders/create a second for ${SECONDS} s to one app process (ROLE=all), after ${WARMUP_S} s of the same load that is not counted (its figures are in the notes). Latency = the emulator's receivedAt − the moment the webhook was sent (target: p99 < 150 ms).`,
  );
  const rows: Array<Array<string | number>> = [];
  const notes: string[] = [];
  for (const provider of providers) {
    const domains = Array.from({ length: SHOPS }, (_, i) => `latency-${i}.myshopify.com`);
    const emulator = await startEmulator();
    const db = await createBenchDatabase(provider);
    try {
      const ws = await emulator.createWorkspaces(SHOPS);
      await seedShops(
        db,
        domains.map((domain, i) => ({ domain, workspaceId: ws[i]!.id, apiKey: ws[i]!.apiKey })),
      );
      const app = await startApp(db, { SERVICE_BASE_URL: emulator.url });
      const events = new EventLog(emulator);
      const tag = randomBytes(3).toString('hex');
      // the load for `seconds`: each shop's orders, its ids under `phase`
      const stream = async (phase: string, seconds: number, first: number) => {
        const sentAt = new Map<string, number>();
        const answered: number[] = [];
        let refused = 0;
        const t0 = Date.now() + 200;
        const intervalMs = 1000 / PER_SHOP_PER_S;
        const senders = domains.map(async (domain, s) => {
          for (let k = 0; k < seconds * PER_SHOP_PER_S; k++) {
            // spread the shops over the interval, so the app sees a steady stream
            await sleep(t0 + k * intervalMs + (s * intervalMs) / SHOPS - Date.now());
            const id = `lat-${tag}-${phase}-${s}-${k}`;
            const at = Date.now();
            if ((await postOrder(app.url, domain, s * 10_000 + first + k, id)) === 200) {
              sentAt.set(id, at);
              answered.push(Date.now() - at);
            } else refused += 1;
          }
        });
        await Promise.all(senders);
        await events.waitFor(sentAt.keys(), 30_000);
        const latencies = [...sentAt].flatMap(([id, at]) => (events.bySource.get(id) ?? []).slice(0, 1).map((e) => e.receivedAt - at));
        return { sentAt, answered, latencies, refused };
      };
      try {
        await sleep(1000);
        const warm = WARMUP_S > 0 ? await stream('warmup', WARMUP_S, 0) : null;
        // PostgreSQL: WAL flushes over the run (the whole server's, pg_stat_wal; nothing else runs)
        const walSyncs = async () =>
          provider === 'postgres' ? Number((await db.query<{ n: string }>('SELECT wal_sync AS n FROM pg_stat_wal'))[0]!.n) : 0;
        const wal0 = await walSyncs();
        const cpu0 = app.cpuSeconds();
        const w0 = Date.now();
        const { sentAt, answered, latencies, refused } = await stream('run', SECONDS, 5_000);
        const cpu = (app.cpuSeconds() - cpu0) / ((Date.now() - w0) / 1000);
        const flushes = (await walSyncs()) - wal0;
        const stages = await stageBreakdown(db, `lat-${tag}-run-`, sentAt, events);
        const pp = (v: number[]) => `${fmt(percentile(v, 50), 0)} / ${fmt(percentile(v, 99), 0)}`;
        notes.push(
          `- ${provider}: app CPU ${fmt(cpu, 2)} cores over the run (${fmt((cpu * 1000) / (SHOPS * PER_SHOP_PER_S), 1)} ms of CPU per order); p50 / p99 ms of sent → stored ${pp(stages.stored)}, stored → processed by stage 2 ${pp(stages.processed)}, processed → accepted by the service ${pp(stages.delivered)}${provider === 'postgres' ? `; WAL flushes ${flushes} (${fmt(flushes / sentAt.size, 1)} per order)` : ''}${warm ? `; the warm-up before it (${WARMUP_S} s of the same load, from the app's start, not counted): ${warm.latencies.length} of ${warm.sentAt.size} delivered, ${warm.refused} refused, e2e p50 / p99 / max ${fmt(percentile(warm.latencies, 50), 0)} / ${fmt(percentile(warm.latencies, 99), 0)} / ${fmt(Math.max(...warm.latencies), 0)} ms` : ''}.`,
        );
        const r429 = (await emulator.requests()).filter((r) => r.status === 429).length;
        rows.push([
          provider,
          sentAt.size,
          latencies.length,
          refused,
          r429,
          events.duplicates(),
          `${fmt(percentile(answered, 50), 0)} / ${fmt(percentile(answered, 99), 0)}`,
          fmt(percentile(latencies, 50), 0),
          fmt(percentile(latencies, 95), 0),
          fmt(percentile(latencies, 99), 0),
          fmt(Math.max(...latencies), 0),
        ]);
      } finally {
        await app.stop();
      }
    } finally {
      await emulator.close();
      await db.drop();
    }
  }
  console.log(
    table(
      [
        'database',
        'webhooks accepted',
        'events received',
        'webhooks refused',
        '429s',
        'sent twice',
        'webhook answer p50 / p99 ms',
        'e2e p50 ms',
        'e2e p95 ms',
        'e2e p99 ms',
        'e2e max ms',
      ],
      rows,
    ),
  );
  console.log(`\n${notes.join('\n')}`);
}

if (require.main === module) runMain(runLatency);
