// Delivery at app-store scale, one table: SQLite and PostgreSQL with one process (ROLE=all),
// and PostgreSQL with 1 web + 2 worker processes (ROLE=web, ROLE=worker ×2) sharing the
// database, their wake-ups travelling by LISTEN/NOTIFY.
//
// Per row, on a fresh database:
// 1. 5,000 connected shops, each with its own workspace at the emulator, each holding one
//    checkout_abandoned due in an hour: shops, connections (keys encrypted as the app does,
//    bound to the shop id), messages and their ShopDue index rows (src/outbox/due.ts lowerDue)
//    are inserted in bulk, straight into the database.
// 2. Idle CPU: the app processes' CPU time from /proc over IDLE_S, after SETTLE_S to settle, as
//    a fraction of one core (summed over the processes of the row).
// 3. 200 of those shops receive one orders/create each, all at once (signed beforehand, sent on
//    200 connections already open); latency = the emulator's receivedAt of each order_placed −
//    the moment its webhook was sent. Then 200 other shops the same way, the app's code now
//    warm (compiled by V8's optimising tiers), as in a deployment that has been serving.
// 4. Burst: 150 orders/create at concurrency 20 for one more shop (its own workspace, the real
//    10/s limit): the 429s, the busiest sliding 1-s window of requests as the emulator stamped
//    them, and the delivered rate ÷ the limit.
// 5. Sent twice: events received more than once for one source id, over the whole row.
//
// The emulator runs in a child process of its own (bench/emulator-process.ts): in this process
// its clock would be delayed by the load generator, and the busiest-window figures with it.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { sampleOrder } from '../sandbox/samples';
import {
  createBenchDatabase,
  stageBreakdown,
  EventLog,
  fmt,
  heading,
  maxInWindow,
  percentile,
  postOrder,
  providersFromArgs,
  runMain,
  seedShops,
  signedWebhook,
  sleep,
  startApp,
  startEmulator,
  table,
  withPrisma,
  type BenchDatabase,
  type Stages,
  type ChildServer,
  type Provider,
  type RemoteEmulator,
} from './lib';

const SHOPS = Number(process.env.BENCH_SCALE_SHOPS ?? 5000);
const HOT = Math.min(SHOPS, Number(process.env.BENCH_SCALE_HOT ?? 200));
const BURST = 150;
const BURST_CONCURRENCY = 20;
const LIMIT = 10;
// A process keeps working for a while after it starts (V8's optimising compiler and memory
// reducer, the pool closing connections it no longer needs): idle cost is the steady state, so
// it is measured only once that work is over.
const SETTLE_S = Number(process.env.BENCH_SCALE_SETTLE_SECONDS ?? 30);
const IDLE_S = Number(process.env.BENCH_SCALE_IDLE_SECONDS ?? 20);

interface Setup {
  name: string;
  provider: Provider;
  /** Processes: one ROLE=all, or web + workers. */
  roles: Array<'all' | 'web' | 'worker'>;
}

interface Outcome {
  setup: Setup;
  idleCpu: number[];
  idleRequests: number;
  /** 200 at once on processes that only waited, then on 200 other shops with the code warm. */
  hot: { latencies: number[]; missing: number; refused: number; stages: Stages; cpuMsPerOrder: number; senderCpuMs: number };
  warm: Outcome['hot'];
  burst: { r429: number; maxWindow: number; rate: number; delivered: number; missing: number; refused: number; drainS: number };
  duplicates: number;
  appLag: string;
  emulatorLag: { p99: number; max: number };
}

const domainOf = (i: number) => `scale-${String(i).padStart(5, '0')}.myshopify.com`;
const BURST_DOMAIN = 'scale-burst.myshopify.com';

/** Each shop's one future message: the checkout_abandoned of a checkout started now, due in an hour. */
async function seedFutureWork(db: BenchDatabase, shops: Array<{ id: string; domain: string; n: number }>): Promise<number> {
  const { mapWebhook } = await import('../src/mapping');
  const { DEFAULT_SETTINGS } = await import('../src/settings/settings');
  const { toRow } = await import('../src/outbox/store-messages');
  const { lowerDue } = await import('../src/outbox/due');
  const { sampleCheckout } = await import('../sandbox/samples');
  const now = new Date();
  let earliest = Infinity;
  await withPrisma(db, async (prisma) => {
    for (let i = 0; i < shops.length; i += 500) {
      const chunk = shops.slice(i, i + 500);
      const rows = chunk.map((s) => {
        const out = mapWebhook({
          topic: 'checkouts/create',
          payload: sampleCheckout(s.n, { at: now }),
          webhookId: `seed-${s.n}`,
          shopDomain: s.domain,
          receivedAt: now,
          settings: DEFAULT_SETTINGS,
        });
        const m = [...out.messages, ...(out.upserts ?? [])].find((x) => x.eventName === 'checkout_abandoned');
        if (!m || m.runAt.getTime() < now.getTime() + 30 * 60_000) throw new Error('expected a checkout_abandoned due in an hour');
        earliest = Math.min(earliest, m.runAt.getTime());
        return toRow(m, { shopId: s.id, status: 'queued', heldReason: null });
      });
      await prisma.outboxMessage.createMany({ data: rows });
      // indexed as due, as stage 2 does in the same transaction as its inserts
      await lowerDue(
        prisma,
        db.provider,
        rows.map((r) => ({ shopId: r.shopId, runAt: r.runAt as Date })),
      );
    }
  });
  return (earliest - now.getTime()) / 60_000;
}

/** The row's processes, in the order of setup.roles (workers are started first, then web). */
async function startProcesses(db: BenchDatabase, setup: Setup, env: Record<string, string>): Promise<ChildServer[]> {
  const apps: ChildServer[] = new Array(setup.roles.length);
  const order = setup.roles.map((role, i) => ({ role, i })).sort((a, b) => Number(a.role === 'web') - Number(b.role === 'web'));
  for (const { role, i } of order) apps[i] = await startApp(db, { ...env, ROLE: role });
  return apps;
}

async function scenario(setup: Setup): Promise<Outcome> {
  const db = await createBenchDatabase(setup.provider);
  const emulator: RemoteEmulator = await startEmulator({ rateLimit: LIMIT });
  let apps: ChildServer[] = [];
  try {
    const t0 = Date.now();
    const workspaces = await emulator.createWorkspaces(SHOPS + 1);
    const seeds = Array.from({ length: SHOPS }, (_, i) => ({
      domain: domainOf(i),
      workspaceId: workspaces[i]!.id,
      apiKey: workspaces[i]!.apiKey,
    }));
    seeds.push({ domain: BURST_DOMAIN, workspaceId: workspaces[SHOPS]!.id, apiKey: workspaces[SHOPS]!.apiKey });
    const ids = await seedShops(db, seeds);
    const dueInMin = await seedFutureWork(
      db,
      Array.from({ length: SHOPS }, (_, i) => ({ id: ids.get(domainOf(i))!, domain: domainOf(i), n: i })),
    );
    const queued = await db.count('OutboxMessage', `"status" = 'queued'`);
    const indexed = await db.count('ShopDue', '"dueAt" IS NOT NULL');
    process.stderr.write(
      `[scale ${setup.name}] seeded ${SHOPS + 1} shops, ${queued} queued messages (${indexed} shops indexed), due in ${fmt(dueInMin, 0)} min, in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`,
    );

    apps = await startProcesses(db, setup, { SERVICE_BASE_URL: emulator.url });
    const web = apps[setup.roles.findIndex((r) => r !== 'worker')]!;

    const mark = (what: string) => process.stderr.write(`[scale ${setup.name}] ${what} at ${Date.now()}\n`);
    // idle
    await sleep(SETTLE_S * 1000);
    mark('idle window starts');
    const before = await emulator.requests();
    const cpu0 = apps.map((a) => a.cpuSeconds());
    const w0 = performance.now();
    await sleep(IDLE_S * 1000);
    const elapsed = (performance.now() - w0) / 1000;
    const idleCpu = apps.map((a, i) => (a.cpuSeconds() - cpu0[i]!) / elapsed);
    const idleRequests = (await emulator.requests()).length - before.length;

    const events = new EventLog(emulator);
    await emulator.loopLag(); // from here on
    mark(`idle window ends; ${HOT} orders sent`);

    // 200 shops at once, twice: first on processes that have done nothing but wait (their code
    // not yet compiled by V8's optimising tiers), then on 200 other shops, the code now warm.
    // The webhooks are signed beforehand and go out on connections already open (undici's
    // Pool), as a sender that has been sending keeps them: made in the timed window through
    // fetch, each on a new connection, they would cost this process CPU taken from the cores the
    // app runs on.
    const tag = randomBytes(3).toString('hex');
    const atOnce = async (round: string, first: number): Promise<Outcome['hot']> => {
      const hot = Array.from({ length: HOT }, (_, i) => {
        const id = `hot-${tag}-${round}-${i}`;
        return { id, ...signedWebhook(domainOf(first + i), 'orders/create', sampleOrder(100_000 + first + i), id) };
      });
      const sender = new Pool(web.url, { connections: HOT, pipelining: 1, keepAliveTimeout: 60_000 });
      await Promise.all(hot.map(() => sender.request({ path: '/healthz', method: 'GET' }).then((r) => r.body.dump())));
      const sentAt = new Map<string, number>();
      let refused = 0;
      const cpu0 = apps.reduce((sum, a) => sum + a.cpuSeconds(), 0);
      const senderCpu0 = process.cpuUsage();
      await Promise.all(
        hot.map(async (w) => {
          sentAt.set(w.id, Date.now());
          const res = await sender.request({ path: '/webhooks', method: 'POST', headers: w.headers, body: w.body });
          await res.body.dump();
          if (res.statusCode !== 200) refused += 1;
        }),
      );
      const senderCpu = process.cpuUsage(senderCpu0);
      await sender.close();
      const missing = await events.waitFor(sentAt.keys(), 60_000);
      return {
        latencies: [...sentAt].flatMap(([id, at]) => (events.bySource.get(id) ?? []).slice(0, 1).map((e) => e.receivedAt - at)),
        missing,
        refused,
        stages: await stageBreakdown(db, `hot-${tag}-${round}-`, sentAt, events),
        // what bounds the latency on a machine this size: the app's CPU per order, all stages
        cpuMsPerOrder: ((apps.reduce((sum, a) => sum + a.cpuSeconds(), 0) - cpu0) * 1000) / HOT,
        senderCpuMs: (senderCpu.user + senderCpu.system) / 1000,
      };
    };
    const cold = await atOnce('cold', 0);
    mark(`${HOT} shops delivered; ${HOT} more sent`);
    const warm = await atOnce('warm', HOT);

    // the burst into one workspace
    mark(`${HOT} shops delivered; burst starts`);
    const burstIds = Array.from({ length: BURST }, (_, i) => `burst-${tag}-${i}`);
    let next = 0;
    let burstRefused = 0;
    const b0 = Date.now();
    await Promise.all(
      Array.from({ length: BURST_CONCURRENCY }, async () => {
        for (let i = next++; i < BURST; i = next++) {
          if ((await postOrder(web.url, BURST_DOMAIN, 200_000 + i, burstIds[i]!)) !== 200) burstRefused += 1;
        }
      }),
    );
    const burstMissing = await events.waitFor(burstIds, 120_000);
    const drainS = (Date.now() - b0) / 1000;
    mark('burst delivered');
    const emulatorLag = await emulator.loopLag();
    const lags = await Promise.all(
      apps.map(async (a) => {
        try {
          const text = await (await fetch(`${a.url}/metrics`)).text();
          const read = (name: string) => Number(new RegExp(`^${name} ([0-9.eE+-]+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000;
          return `${fmt(read('nodejs_eventloop_lag_p99_seconds'), 0)}/${fmt(read('nodejs_eventloop_lag_max_seconds'), 0)}`;
        } catch {
          return 'n/a';
        }
      }),
    );
    const burstWs = (
      await db.query<{ workspaceId: string }>(
        `SELECT "workspaceId" FROM "Connection" WHERE "shopId" = ${db.provider === 'postgres' ? '$1' : '?'}`,
        [ids.get(BURST_DOMAIN)],
      )
    )[0]!.workspaceId;
    const sends = (await emulator.requests([burstWs])).filter((r) => r.path.includes('/webhook/send'));
    const ok = sends
      .filter((r) => r.status === 200)
      .map((r) => r.at)
      .sort((a, b) => a - b);
    await events.poll();
    return {
      setup,
      idleCpu,
      idleRequests,
      hot: cold,
      warm,
      burst: {
        r429: sends.filter((r) => r.status === 429).length,
        maxWindow: maxInWindow(sends.map((r) => r.at)),
        rate: (ok.length - 1) / ((ok[ok.length - 1]! - ok[0]!) / 1000),
        delivered: ok.length,
        missing: burstMissing,
        refused: burstRefused,
        drainS,
      },
      duplicates: events.duplicates(),
      appLag: lags.join(', '),
      emulatorLag,
    };
  } finally {
    await Promise.all(apps.map((a) => a.stop()));
    await emulator.close();
    await db.drop();
  }
}

const pp = (v: number[]) => `${fmt(percentile(v, 50), 0)} / ${fmt(percentile(v, 99), 0)}`;

export async function runScale(): Promise<void> {
  const providers = await providersFromArgs();
  heading(
    'Delivery at scale: idle shops, 200 due at once, a burst at the limit',
    [
      `- ${SHOPS.toLocaleString('en-US')} connected shops, each with its own workspace and one checkout_abandoned due in an hour, inserted in bulk (with their ShopDue rows). Idle CPU: the app processes' CPU time over ${IDLE_S} s (after ${SETTLE_S} s to settle) ÷ wall time, summed over the row's processes.`,
      `- ${HOT} of those shops receive one orders/create each, all at once (signed beforehand, sent on ${HOT} connections already open): latency from the moment each webhook was sent to the emulator's receivedAt of its order_placed. Then ${HOT} other shops the same way, once the first ${HOT} are delivered: the same processes, their code now warm.`,
      `- Burst: ${BURST} orders/create at concurrency ${BURST_CONCURRENCY} into one more shop's workspace at the real limit (${LIMIT}/s). The busiest window is the most requests (any status) in any sliding second, as the emulator stamped them; rate = (delivered − 1) ÷ (last − first accepted send).`,
      `- The emulator runs ${process.env.BENCH_EMULATOR === 'in-process' ? 'IN THIS PROCESS (BENCH_EMULATOR=in-process)' : 'in a child process of its own'}; "sent twice" counts events received more than once for one source id over the whole row.`,
    ].join('\n'),
  );
  const setups: Setup[] = [];
  for (const p of providers) setups.push({ name: `${p}, 1 process`, provider: p, roles: ['all'] });
  if (providers.includes('postgres'))
    setups.push({ name: 'postgres, 1 web + 2 workers', provider: 'postgres', roles: ['web', 'worker', 'worker'] });

  const rows: Array<Array<string | number>> = [];
  const notes: string[] = [];
  const spread = (v: number[]) => `${fmt(percentile(v, 50), 0)} / ${fmt(percentile(v, 99), 0)} / ${fmt(Math.max(...v), 0)}`;
  // BENCH_SCALE_ONLY=<part of a setup's name>, to run one row while investigating
  for (const s of setups.filter((x) => !process.env.BENCH_SCALE_ONLY || x.name.includes(process.env.BENCH_SCALE_ONLY))) {
    const o = await scenario(s);
    const cpu = o.idleCpu.reduce((a, b) => a + b, 0);
    rows.push([
      s.name,
      SHOPS.toLocaleString('en-US'),
      `${fmt(cpu, 3)}${o.idleCpu.length > 1 ? ` (${o.idleCpu.map((c) => fmt(c, 3)).join(' + ')})` : ''}`,
      spread(o.hot.latencies),
      spread(o.warm.latencies),
      o.burst.r429,
      `${o.burst.maxWindow} (limit ${LIMIT})`,
      fmt(o.burst.rate / LIMIT, 3),
      o.duplicates,
    ]);
    const roundNote = (what: string, h: Outcome['hot']) =>
      `${what}: ${h.latencies.length} delivered, ${h.missing} missing, ${h.refused} webhooks refused, ` +
      `p50 / p99 ms of sent → stored ${pp(h.stages.stored)}, stored → processed by stage 2 ${pp(h.stages.processed)}, processed → accepted by the service ${pp(h.stages.delivered)}, app CPU ${fmt(h.cpuMsPerOrder, 1)} ms per order (all processes, intake to accepted), sender CPU ${fmt(h.senderCpuMs, 0)} ms for the ${HOT} (this process); `;
    notes.push(
      `- ${s.name}: requests to the service while idle ${o.idleRequests}; ${roundNote(`${HOT} shops`, o.hot)}${roundNote(`${HOT} more, warm`, o.warm)}` +
        `burst: ${o.burst.delivered} delivered, ${o.burst.missing} missing, ${o.burst.refused} refused, ${fmt(o.burst.drainS, 1)} s from first webhook to last event; ` +
        `event-loop delay p99/max ms: app ${o.appLag} (${s.roles.join(', ')}), emulator ${fmt(o.emulatorLag.p99, 0)}/${fmt(o.emulatorLag.max, 0)}.`,
    );
  }
  console.log(
    table(
      [
        'setup',
        'shops',
        'idle CPU (cores)',
        `${HOT} due at once: p50 / p99 / max ms`,
        `${HOT} more at once, warm: p50 / p99 / max ms`,
        'burst 429s',
        'burst busiest 1 s',
        'burst rate ÷ limit',
        'sent twice',
      ],
      rows,
    ),
  );
  console.log(`\n${notes.join('\n')}`);
}

if (require.main === module) runMain(runScale);
