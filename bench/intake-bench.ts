// The intake benchmark's method, shared by the webhook intake (bench/ingest.ts) and the
// storefront pixel's (bench/pixel.ts): the bare route (the ceiling), the connector's web role on
// SQLite and on PostgreSQL, and the default deployment (ROLE=all on SQLite), side by side in one
// table from one run, with the disk's floor beside them (the bare route plus one synced write per
// answer). Each server is its own child process, and all of them run at once (an idle server
// costs nothing), so that the measurements can be interleaved: other work shares this 2-core
// machine, and a drift in its load then hits every server alike.
//
// - req/s at concurrency 50: autocannon (closed loop), three rounds of 5 s, each round measuring
//   every server in turn; the table shows the median round, and the ratio to bare is the median
//   of the per-round ratios.
// - response p50/p99 at a fixed OFFERED rate (1,000/s): open loop (bench/open-loop.ts) in a
//   process of its own, 5 s per server per round, each time measured from the moment the
//   request was scheduled to leave; the percentiles are over all rounds. All open-loop rounds
//   run before the closed-loop rounds, so none measures the aftermath of a saturating run.
// - the connector runs as ROLE=web on each database: stage 1 alone, as a web process does in
//   production. The default deployment, ROLE=all on SQLite (stage 1, stage 2 and delivery in one
//   process), is a row of its own in the same rounds. Its stage 2 works through a round's
//   receipts during and after the round; the next round starts once it has caught up, so no
//   other server is measured beside that leftover work. Its deliveries (one workspace, paced at
//   10/s) go on throughout.
// - stage 2: the receipts a ROLE=web server stored are then processed by a fresh ROLE=worker process;
//   its rate is read from the receipts' processedAt (one value per batch): receipts processed
//   after the first batch ÷ time from the first batch to the last. Start-up is not counted.
// - RSS: peak VmRSS of the server under the intake load, and of the worker during stage 2.
// - idle: the worker's CPU (fraction of a core) over 10 s once stage 2 is done, with whatever
//   stage 2 left waiting (messages due later, anonymous storefront events).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { startOpenLoopGenerator, type OpenLoopGenerator, type OpenLoopSource } from './open-loop';
import {
  createBenchDatabase,
  epochMs,
  fmt,
  peakRss,
  percentile,
  providersFromArgs,
  seedShops,
  sleep,
  startApp,
  startChild,
  startEmulator,
  table,
  withPrisma,
  type BenchDatabase,
  type ChildServer,
  type Provider,
  type RemoteEmulator,
  type Role,
} from './lib';

const ROUNDS = Number(process.env.BENCH_INGEST_ROUNDS ?? 3);
const ROUND_S = Number(process.env.BENCH_INGEST_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_INGEST_CONNECTIONS ?? 50);
const OPEN_RATE = Number(process.env.BENCH_INGEST_RATE ?? 1000);
const OPEN_S = Number(process.env.BENCH_INGEST_OPEN_SECONDS ?? 5);
const WARMUP_S = Number(process.env.BENCH_INGEST_WARMUP_SECONDS ?? 10);
const IDLE_S = 10;
// how long the default deployment's stage 2 may take to catch up after a round
const CATCH_UP_LIMIT_S = 300;
const FLOOR_NAME = "bare route + a synced write (the disk's floor)";
// connections the open loop opens before its clock starts (it may open more under a stall)
const WARM_CONNECTIONS = 16;

export const intakeMethod = {
  rounds: ROUNDS,
  describe: (what: { requests: string; unit: string }) =>
    [
      `- All servers run at once, each in its own process, and are measured in turn: after a ${WARMUP_S} s warm-up at the offered rate, first ${ROUNDS} rounds of the open loop, then ${ROUNDS} rounds of the closed loop (a saturating closed-loop round leaves work behind, such as autovacuum and WAL checkpoints, that a steady offered rate does not make).`,
      `- req/s: autocannon (closed loop), ${CONNECTIONS} connections, ${ROUND_S} s per server per round; ${what.requests} The median round is shown; the ratio is the median of the per-round ratios.`,
      `- p50 / p99 / max: open loop, ${OPEN_RATE.toLocaleString('en-US')} requests/s offered whatever the answers, ${OPEN_S} s per server per round, from a generator process of its own (warm from the warm-up on) with ${WARM_CONNECTIONS} connections opened beforehand; each time from the request's scheduled start to its answer, over all rounds.`,
      `- ${FLOOR_NAME}: the bare route, and before each answer the body written to a file and an fdatasync of it (shared by the writes made meanwhile, the app's own wal-flush.ts, as SQLite's receipts are synced), with no database: the response time no durable intake can beat on this disk, measured in the same rounds.`,
      `- The connector runs as ROLE=web (stage 1 only) on each database. The default deployment, ROLE=all on SQLite (stage 1, stage 2 and delivery in one process), is a row of its own, measured in the same rounds; after each of its rounds the next round waits until its stage 2 has processed every stored receipt (the time it took is in its note), so no other server is measured beside that work; its deliveries (one workspace, paced at 10/s) go on throughout.`,
      `- Stage 2 of the ROLE=web rows: afterwards, a fresh ROLE=worker process processes every stored receipt; rate = ${what.unit} after the first batch ÷ (last − first batch processedAt).`,
      `- RSS: peak VmRSS of the server under the intake load (for ROLE=all, its own stage 2 and delivery included) / of the worker during stage 2. Idle: the worker's CPU over ${IDLE_S} s once stage 2 is done, while it delivers what stage 2 queued (paced at 10/s), then, with the workspace paused, over ${IDLE_S} s after ${IDLE_S} s of settling: what the state stage 2 left waiting (anonymous visitors' events, abandonment timers) costs alone.`,
    ].join('\n'),
};

export interface IntakeSpec {
  /** The bare route's server (bench/bare-server.ts) and its environment. */
  bare: { name: string; env: Record<string, string> };
  /** The shop all the load is for. */
  shop: string;
  /** Extra rows for the seeded shop (the pixel's key); its environment for the app. */
  prepare?: (db: BenchDatabase, shopId: string) => Promise<void>;
  appEnv?: Record<string, string>;
  /** autocannon's requests (cycled; `[<id>]` is replaced by a fresh id on each request). */
  closedRequests: () => autocannon.Request[];
  /** The open loop's requests: a factory the generator's own process imports. */
  openRequests: OpenLoopSource;
  /** What one stored receipt counts as in the stage-2 rate (5 for a pixel batch of 5 events). */
  unitsPerReceipt: number;
  unit: string;
  /** A line about the stage-2 worker once it is done (read from its /metrics), printed with its target. */
  stage2Note?: (metrics: string) => string;
}

interface Target {
  name: string;
  /** The connector's role; none for the bare routes. */
  role?: Extract<Role, 'web' | 'all'>;
  server: ChildServer;
  db?: BenchDatabase;
  emulator?: RemoteEmulator;
  rates: number[];
  closedP99: number[];
  failures: number;
  openLatencies: number[];
  openScheduled: number;
  openOk: number;
  openStartRate: number[];
  generatorLagP99: number[];
  openP99: number[];
  counted: number;
  rssIntakeMb: number;
  stored?: number;
  /** ROLE=all: seconds from each measured round's end until its own stage 2 had processed every stored receipt. */
  catchUpS: { open: number[]; closed: number[] };
  /** ROLE=all: the stage-2 note, read from its own /metrics before it stops. */
  inProcessNote?: string;
  stage2?: {
    perSec: number;
    receipts: number;
    seconds: number;
    rssMb: number;
    batches: number;
    idleCores: number;
    waitingCores: number;
    note?: string;
  };
}

/** Stage 2 over what is stored: a worker process processes every pending receipt, then idles. */
async function stage2(
  db: BenchDatabase,
  env: Record<string, string>,
  unitsPerReceipt: number,
  note?: IntakeSpec['stage2Note'],
): Promise<NonNullable<Target['stage2']>> {
  const worker = await startApp(db, { ...env, ROLE: 'worker' });
  try {
    const { peakMb } = await peakRss(
      worker,
      (async () => {
        const end = Date.now() + 15 * 60_000;
        while ((await db.count('WebhookReceipt', '"processedAt" IS NULL')) > 0) {
          if (Date.now() > end) throw new Error('stage 2 did not finish in 15 min');
          await sleep(500);
        }
      })(),
    );
    const batches = await db.query<{ t: number; n: number | string }>(
      `SELECT ${epochMs(db.provider, 'processedAt')} AS t, count(*) AS n FROM "WebhookReceipt" WHERE "processedAt" IS NOT NULL GROUP BY "processedAt" ORDER BY 1`,
    );
    const total = batches.reduce((s, b) => s + Number(b.n), 0);
    const first = batches[0]!;
    const last = batches[batches.length - 1]!;
    const seconds = (Number(last.t) - Number(first.t)) / 1000;
    const cores = async () => {
      const cpu0 = worker.cpuSeconds();
      const t0 = Date.now();
      await sleep(IDLE_S * 1000);
      return (worker.cpuSeconds() - cpu0) / ((Date.now() - t0) / 1000);
    };
    // deliveries paced at 10/s go on meanwhile
    const idleCores = await cores();
    // then what the waiting state costs alone: deliveries paused for a day, as a Retry-After would
    await withPrisma(db, (prisma) => prisma.workspacePacer.updateMany({ data: { pausedUntil: new Date(Date.now() + 86_400_000) } }));
    // after the lanes in flight end, and past the tail of the burst (V8 shrinking the heap it grew)
    await sleep(IDLE_S * 1000);
    const waitingCores = await cores();
    const noted = note ? note(await (await fetch(`${worker.url}/metrics`)).text()) : undefined;
    return {
      perSec: ((total - Number(first.n)) * unitsPerReceipt) / seconds,
      receipts: total,
      seconds,
      rssMb: peakMb,
      batches: batches.length,
      idleCores,
      waitingCores,
      note: noted,
    };
  } finally {
    await worker.stop();
  }
}

const median = (v: number[]) => percentile(v, 50);

/** Seconds until every receipt stored in `db` is processed (the ROLE=all server's own stage 2). */
async function caughtUp(db: BenchDatabase): Promise<number> {
  const t0 = Date.now();
  while ((await db.count('WebhookReceipt', '"processedAt" IS NULL')) > 0) {
    if (Date.now() - t0 > CATCH_UP_LIMIT_S * 1000)
      throw new Error(`the ROLE=all server's stage 2 did not catch up in ${CATCH_UP_LIMIT_S} s`);
    await sleep(100);
  }
  return (Date.now() - t0) / 1000;
}

export async function runIntakeBench(spec: IntakeSpec): Promise<void> {
  const providers = await providersFromArgs();
  const closedLoop = (url: string, seconds: number) =>
    autocannon({ url, connections: CONNECTIONS, duration: seconds, idReplacement: true, requests: spec.closedRequests() });
  const targets: Target[] = [];
  let generator: OpenLoopGenerator | undefined;
  let floorDir: string | undefined;
  const blank = () => ({
    rates: [],
    closedP99: [],
    failures: 0,
    openLatencies: [],
    openScheduled: 0,
    openOk: 0,
    openStartRate: [],
    generatorLagP99: [],
    openP99: [],
    counted: 0,
    rssIntakeMb: 0,
    catchUpS: { open: [], closed: [] },
  });
  // the connector on a fresh database of its own, with its own emulator
  const connector = async (provider: Provider, role: NonNullable<Target['role']>) => {
    const db = await createBenchDatabase(provider);
    const emulator = await startEmulator();
    const t: Partial<Target> = { db, emulator };
    try {
      const [ws] = await emulator.createWorkspaces(1);
      const ids = await seedShops(db, [{ domain: spec.shop, workspaceId: ws!.id, apiKey: ws!.apiKey }]);
      await spec.prepare?.(db, ids.get(spec.shop)!);
      t.server = await startApp(db, { SERVICE_BASE_URL: emulator.url, ROLE: role, ...spec.appEnv });
    } finally {
      // pushed even when start-up failed, so the finally below cleans up what was made
      targets.push({
        name: `connector on ${provider}, ROLE=${role}${role === 'all' ? ' (default)' : ''}`,
        role,
        ...blank(),
        ...t,
      } as Target);
    }
  };
  try {
    targets.push({ name: spec.bare.name, server: await startChild('bare-server.ts', spec.bare.env, 'bare'), ...blank() });
    // the disk's floor: the bare route plus one synced write per answer (bench/bare-server.ts)
    floorDir = fs.mkdtempSync(path.join(os.tmpdir(), 'connector-bench-floor-'));
    targets.push({
      name: FLOOR_NAME,
      server: await startChild('bare-server.ts', { ...spec.bare.env, BARE_SYNC_DIR: floorDir }, 'bare-synced'),
      ...blank(),
    });
    for (const provider of providers) {
      await connector(provider, 'web');
      // the default deployment: one process, stage 2 and delivery beside the intake
      if (provider === 'sqlite') await connector(provider, 'all');
    }

    const gen = (generator = await startOpenLoopGenerator());
    // the ROLE=all server's stage 2 finishes its round's receipts before the next round starts
    const settle = async (t: Target, round?: number[]) => {
      if (t.role !== 'all' || !t.db) return;
      const s = await caughtUp(t.db);
      round?.push(s);
    };
    const openRound = async (t: Target, seconds: number, measured: boolean) => {
      const o = await gen.run({
        url: t.server.url,
        rate: OPEN_RATE,
        seconds,
        source: spec.openRequests,
        warmConnections: WARM_CONNECTIONS,
      });
      t.counted += o.ok;
      t.failures += o.non2xx + o.errors;
      await settle(t, measured ? t.catchUpS.open : undefined);
      if (!measured) return;
      t.openLatencies.push(...o.latencies);
      t.openScheduled += o.scheduled;
      t.openOk += o.ok;
      t.openStartRate.push(o.startedPerSec);
      t.generatorLagP99.push(o.sendLag.p99);
      t.openP99.push(percentile(o.latencies, 99));
    };
    const { peaks } = await peakRss(
      targets.map((t) => t.server),
      (async () => {
        for (const t of targets) await openRound(t, WARMUP_S, false); // JIT, pools, page cache
        // Latency at the offered rate first, then throughput: a closed-loop round saturates the
        // server and leaves work behind it (PostgreSQL's autovacuum of thousands of new rows, WAL
        // checkpoints, old-space GC) that a steady 1,000/s does not make, and an open-loop round
        // right after one would measure part of that aftermath.
        for (let round = 0; round < ROUNDS; round++) {
          for (const t of targets) {
            await openRound(t, OPEN_S, true);
            await sleep(500);
          }
        }
        for (let round = 0; round < ROUNDS; round++) {
          for (const t of targets) {
            const r = await closedLoop(t.server.url, ROUND_S);
            t.rates.push(r['2xx'] / ROUND_S);
            t.closedP99.push(r.latency.p99);
            t.failures += r.non2xx + r.errors + r.timeouts;
            t.counted += r['2xx'];
            await settle(t, t.catchUpS.closed);
            await sleep(500);
          }
        }
      })(),
    );
    targets.forEach((t, i) => (t.rssIntakeMb = peaks[i]!));
    for (const t of targets.filter((x) => x.role === 'all' && spec.stage2Note)) {
      t.inProcessNote = spec.stage2Note!(await (await fetch(`${t.server.url}/metrics`)).text());
    }
    await Promise.all(targets.map((t) => t.server.stop()));

    for (const t of targets) {
      if (!t.db || !t.emulator) continue;
      t.stored = await t.db.count('WebhookReceipt');
      if (t.role === 'web')
        t.stage2 = await stage2(t.db, { SERVICE_BASE_URL: t.emulator.url, ...spec.appEnv }, spec.unitsPerReceipt, spec.stage2Note);
    }
  } finally {
    await generator?.close();
    for (const t of targets) {
      await t.server?.stop();
      await t.emulator?.close();
      await t.db?.drop();
    }
    if (floorDir) fs.rmSync(floorDir, { recursive: true, force: true });
  }

  const base = targets[0]!;
  console.log(
    table(
      [
        'server',
        `req/s at ${CONNECTIONS} conns`,
        'ratio to bare',
        `p50 / p99 / max ms at ${OPEN_RATE.toLocaleString('en-US')} req/s offered`,
        'non-2xx + errors',
        `stage 2 ${spec.unit}/s`,
        'RSS peak MB (intake / stage 2)',
        'worker idle after, cores (delivering / paused)',
      ],
      targets.map((t) => {
        const lat = t.openLatencies;
        return [
          t.name,
          fmt(median(t.rates), 0),
          t === base ? '1.000 (ceiling)' : fmt(median(t.rates.map((r, i) => r / base.rates[i]!)), 3),
          `${fmt(percentile(lat, 50), 1)} / ${fmt(percentile(lat, 99), 1)} / ${fmt(Math.max(...lat), 0)}`,
          t.failures,
          t.stage2 ? fmt(t.stage2.perSec, 0) : t.role === 'all' ? 'in process' : '—',
          `${fmt(t.rssIntakeMb, 0)} / ${t.stage2 ? fmt(t.stage2.rssMb, 0) : '—'}`,
          t.stage2 ? `${fmt(t.stage2.idleCores, 3)} / ${fmt(t.stage2.waitingCores, 3)}` : '—',
        ];
      }),
    ),
  );
  console.log('');
  for (const t of targets) {
    const parts = [
      `req/s per round ${t.rates.map((r) => fmt(r, 0)).join(', ')}; closed-loop p99 per round ${t.closedP99.join(', ')} ms (autocannon, whole ms)`,
      `open loop: p99 per round ${t.openP99.map((r) => fmt(r, 1)).join(', ')} ms, ${t.openOk} of ${t.openScheduled} answered 2xx, started at ${t.openStartRate.map((r) => fmt(r, 0)).join(', ')}/s, generator lag p99 ${t.generatorLagP99.map((r) => fmt(r, 1)).join(', ')} ms`,
    ];
    if (t.stored !== undefined)
      parts.push(`receipts stored ${t.stored} for ${t.counted} 2xx counted (a few more were in flight when autocannon stopped)`);
    if (t.stage2)
      parts.push(
        `stage 2 processed ${t.stage2.receipts} receipts in ${t.stage2.batches} batches, ${fmt(t.stage2.seconds, 1)} s from the first batch to the last`,
      );
    if (t.stage2?.note) parts.push(t.stage2.note);
    if (t.role === 'all') {
      const most = (v: number[]) => (v.length ? fmt(Math.max(...v), 1) : 'n/a');
      parts.push(
        `stage 2 in the same process caught up ${most(t.catchUpS.open)} s at most after an open-loop round and ${most(t.catchUpS.closed)} s after a closed-loop round (per round ${[...t.catchUpS.open, ...t.catchUpS.closed].map((x) => fmt(x, 1)).join(', ')} s)`,
      );
    }
    if (t.inProcessNote) parts.push(t.inProcessNote);
    console.log(`- ${t.name}: ${parts.join('; ')}.`);
  }
}
