// A restock of a popular variant beside order confirmations: one workspace at its real limit
// (10 requests/s), a connected shop that granted read_products, 10,000 notify-me subscribers of
// one sold-out variant (inserted in bulk), then the restock as Shopify sends it (the fake shop's
// variants/in_stock and products/update, signed, to POST /webhooks) while one orders/create a
// second arrives for 60 s. Measured: the time from the restock webhook's 200 to the last of its
// back_in_stock messages queued (the ProductSignal row, polled on a connection of its own), each
// chunk's transaction timed from outside, the pace of the drain, 429s and the most sends in any
// second (the emulator's request log), each order from due to accepted, and whether anybody was
// sent twice. Deployments: ROLE=all (both databases), and on PostgreSQL 1 web + 2 workers.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import Database from 'better-sqlite3';
import pg from 'pg';
import { DEFAULT_SCOPES } from '../src/config';
import { startFakeShop, type FakeShop } from '../sandbox/fake-shop';
import {
  API_KEY,
  API_SECRET,
  createBenchDatabase,
  epochMs,
  eventLoopLag,
  EventLog,
  fmt,
  heading,
  pacerEvents,
  percentile,
  postOrder,
  providersFromArgs,
  runMain,
  seedShops,
  signedWebhook,
  sleep,
  stageBreakdown,
  startApp,
  startEmulator,
  table,
  withPrisma,
  type BenchDatabase,
  type ChildServer,
  type Provider,
  type RemoteEmulator,
} from './lib';

const LIMIT = 10;
const SUBSCRIBERS = Number(process.env.BENCH_RESTOCK_SUBSCRIBERS ?? 10_000);
const SECONDS = Number(process.env.BENCH_RESTOCK_SECONDS ?? 60);
const DOMAIN = 'restock.myshopify.com';
/** The sandbox catalog's Merino Socks, small: sold out in the fake shop from the start. */
const PRODUCT_ID = '8105';
const VARIANT_ID = '45105';
/** How often the signal row is read while the runner queues. */
const POLL_MS = 20;
const ORDER_P99_MS = 1_500;
const ORDER_MAX_MS = 2_000;

/** The most sends in any sliding second, and when that second began. */
function busiestSecond(times: number[]): { n: number; at: number } {
  const t = [...times].sort((a, b) => a - b);
  let best = { n: 0, at: NaN };
  for (let i = 0, j = 0; i < t.length; i++) {
    while (t[i]! - t[j]! >= 1000) j++;
    if (i - j + 1 > best.n) best = { n: i - j + 1, at: t[j]! };
  }
  return best;
}

/** An offline access token the fake shop issued for the shop (token exchange), for the app's session. */
async function offlineToken(fake: FakeShop, domain: string): Promise<string> {
  const res = await fetch(`${fake.url}/admin/oauth/access_token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_id: API_KEY,
      client_secret: API_SECRET,
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: fake.mintSessionToken(domain),
      subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
      requested_token_type: 'urn:shopify:params:oauth:token-type:offline-access-token',
    }),
  });
  const body = (await res.json()) as { access_token?: string };
  if (!res.ok || !body.access_token) throw new Error(`the fake shop issued no token: ${res.status}`);
  return body.access_token;
}

/** The variant's notify-me subscribers, straight into the table (the form's route is not what is measured). */
async function subscribe(db: BenchDatabase, shopId: string): Promise<void> {
  const now = new Date();
  const expiresAt = new Date(now.getTime() + 90 * 86_400_000);
  await withPrisma(db, async (prisma) => {
    for (let i = 0; i < SUBSCRIBERS; i += 1000) {
      await prisma.stockSubscription.createMany({
        data: Array.from({ length: Math.min(1000, SUBSCRIBERS - i) }, (_, k) => ({
          shopId,
          variantId: VARIANT_ID,
          productId: PRODUCT_ID,
          email: `subscriber-${i + k}@example.com`,
          source: 'guest',
          createdAt: now,
          renewedAt: now,
          expiresAt,
        })),
      });
    }
  });
}

/** One connection kept open for the polling, so each read is a query and not a connect. */
async function openReader(db: BenchDatabase): Promise<{ read<R>(sql: string): Promise<R[]>; close(): Promise<void> }> {
  if (db.provider === 'postgres') {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    return { read: async <R>(sql: string) => (await c.query(sql)).rows as R[], close: () => c.end() };
  }
  const d = new Database(db.url.replace(/^file:/, ''), { readonly: true, timeout: 10_000 });
  return { read: async <R>(sql: string) => d.prepare(sql).all() as R[], close: async () => void d.close() };
}

interface Progress {
  /** When the signal row was first seen (recorded by stage 2), Date.now(). */
  seen: number | null;
  /** Each change of its queued count: [Date.now() when seen, queued]. */
  steps: Array<[number, number]>;
  /** When it was first seen done (or dropped), with its note. */
  ended: number | null;
  state: string;
  note: string | null;
  /** The longest time between two reads: how late a sighting may be. */
  maxGap: number;
}

/** Reads the restock's signal every POLL_MS until it ends or `until` (Date.now()) passes. */
async function followSignal(db: BenchDatabase, until: number): Promise<Progress> {
  const reader = await openReader(db);
  const p: Progress = { seen: null, steps: [], ended: null, state: 'absent', note: null, maxGap: 0 };
  let last = Date.now();
  try {
    while (Date.now() < until) {
      const rows = await reader.read<{ state: string; queued: number | string; note: string | null }>(
        `SELECT "state", "queued", "note" FROM "ProductSignal" WHERE "kind" = 'restock'`,
      );
      const at = Date.now();
      p.maxGap = Math.max(p.maxGap, at - last);
      last = at;
      const r = rows[0];
      if (r) {
        p.seen ??= at;
        const q = Number(r.queued);
        if (q !== (p.steps.at(-1)?.[1] ?? 0)) p.steps.push([at, q]);
        p.state = r.state;
        p.note = r.note;
        if (r.state !== 'pending') {
          p.ended = at;
          break;
        }
      }
      await sleep(POLL_MS);
    }
  } finally {
    await reader.close();
  }
  return p;
}

interface Chunk {
  /** The chunk's `now`, taken before its transaction began (its messages' dueAt, which a retry leaves). */
  start: number;
  /** When its messages were inserted (their createdAt): the reads and marks before it are done. */
  inserted: number;
  /** When the poll first saw its count in the signal row: committed by then (within POLL_MS). */
  committed: number;
  size: number;
}

interface Result {
  provider: Provider;
  deployment: string;
  queuedMs: number;
  queued: number;
  chunks: Chunk[];
  pace: number;
  r429: number;
  maxWindow: number;
  orders: number;
  p50: number;
  p99: number;
  max: number;
  e2eP99: number;
  e2eMax: number;
  delivered: number;
  sentTwice: number;
  notes: string[];
}

async function scenario(provider: Provider, emulator: RemoteEmulator, split: boolean): Promise<Result> {
  const db = await createBenchDatabase(provider);
  const fake = await startFakeShop({
    apiKey: API_KEY,
    apiSecret: API_SECRET,
    host: '127.0.0.1',
    shops: [{ domain: DOMAIN, scopes: `${DEFAULT_SCOPES},read_products` }],
  });
  const apps: ChildServer[] = [];
  try {
    const [ws] = await emulator.createWorkspaces(1, LIMIT);
    const token = await offlineToken(fake, DOMAIN);
    const ids = await seedShops(db, [
      { domain: DOMAIN, workspaceId: ws!.id, apiKey: ws!.apiKey, scope: `${DEFAULT_SCOPES},read_products`, accessToken: token },
    ]);
    const shopId = ids.get(DOMAIN)!;
    await subscribe(db, shopId);
    const env = { SERVICE_BASE_URL: emulator.url, SHOPIFY_ADMIN_ORIGIN: fake.url };
    if (split)
      apps.push(
        await startApp(db, { ...env, ROLE: 'web' }),
        await startApp(db, { ...env, ROLE: 'worker' }),
        await startApp(db, { ...env, ROLE: 'worker' }),
      );
    else apps.push(await startApp(db, env));
    const intake = apps[0]!;
    const log = new EventLog(emulator);

    // one order through first, not counted: the processes' first delivery is not the restock's
    const warm = `restock-warm-${randomUUID()}`;
    if ((await postOrder(intake.url, DOMAIN, 49_999, warm)) !== 200) throw new Error('warm-up order refused');
    if ((await log.waitFor([warm], 30_000)) > 0) throw new Error('the warm-up order was not delivered in 30 s');
    await Promise.all(apps.map((a) => eventLoopLag(a.url)));
    await emulator.loopLag();
    const loadBefore = os.loadavg()[0]!;

    // the restock, as Shopify sends it: variants/in_stock, then products/update
    const change = fake.setInventory(DOMAIN, VARIANT_ID, 50);
    if (!change || change.webhooks[0]?.topic !== 'variants/in_stock') throw new Error('the fake shop gave no variants/in_stock');
    const send = async (topic: string, payload: unknown): Promise<number> => {
      const signed = signedWebhook(DOMAIN, topic, payload, `restock-${topic}-${randomUUID()}`);
      const res = await fetch(`${intake.url}/webhooks`, { method: 'POST', headers: signed.headers, body: signed.body });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${topic} refused: ${res.status}`);
      return Date.now();
    };
    const restockSent = Date.now();
    const t200 = await send('variants/in_stock', change.webhooks[0].payload);
    const windowEnd = t200 + SECONDS * 1000;
    const following = followSignal(db, Math.max(windowEnd, t200 + 600_000));
    let lagQueueing: Array<{ p99: number; max: number }> = [];
    const lagRead = following.then(async () => {
      lagQueueing = await Promise.all(apps.map((a) => eventLoopLag(a.url)));
    });
    // Shopify's products/update for the same change comes on its heels
    const updateSent = Date.now();
    let updateAnswered = NaN;
    for (const w of change.webhooks.slice(1)) updateAnswered = (await send(w.topic, w.payload)) - updateSent;

    // the orders: one a second from 250 ms after the restock's 200, for the window
    const sentAt = new Map<string, number>();
    for (let i = 0; i < SECONDS; i++) {
      await sleep(t200 + 250 + i * 1000 - Date.now());
      const id = `restock-order-${randomUUID()}`;
      sentAt.set(id, Date.now());
      const status = await postOrder(intake.url, DOMAIN, 50_000 + i, id);
      if (status !== 200) throw new Error(`order webhook refused: ${status}`);
    }
    await sleep(windowEnd - Date.now());
    const emulatorLag = await emulator.loopLag();
    const loadAfter = os.loadavg()[0]!;
    const missing = await log.waitFor(sentAt.keys(), 15_000);
    const progress = await following;
    await lagRead;

    // the chunks, from their messages' stamps and the poll's sightings of their commits
    const rows = await db.query<{ s: number; c: number; n: number | string }>(
      `SELECT ${epochMs(provider, 'dueAt')} AS s, MIN(${epochMs(provider, 'createdAt')}) AS c, COUNT(*) AS n FROM "OutboxMessage" WHERE "eventName" = 'back_in_stock' GROUP BY "dueAt" ORDER BY "dueAt"`,
    );
    let cumulative = 0;
    const chunks: Chunk[] = rows.map((r) => {
      cumulative += Number(r.n);
      const seen = progress.steps.find(([, q]) => q >= cumulative);
      return { start: Number(r.s), inserted: Number(r.c), committed: seen ? seen[0] : NaN, size: Number(r.n) };
    });
    const queued = progress.steps.at(-1)?.[1] ?? 0;
    // the last commit happened before the poll saw it, and before the runner ended the signal (its
    // updatedAt, on the app's clock, after one more chunk that read nobody): the earlier of the two
    const [signal] = await db.query<{ u: number }>(
      `SELECT ${epochMs(provider, 'updatedAt')} AS u FROM "ProductSignal" WHERE "kind" = 'restock'`,
    );
    const lastQueued = Math.min(progress.steps.at(-1)?.[0] ?? NaN, Number(signal?.u ?? NaN));
    const [outboxRows] = await db.query<{ n: number | string; emails: number | string }>(
      `SELECT COUNT(*) AS n, COUNT(DISTINCT "email") AS emails FROM "OutboxMessage" WHERE "eventName" = 'back_in_stock'`,
    );

    await log.poll();
    const due = await db.query<{ sourceId: string; d: number }>(
      `SELECT "sourceId", ${epochMs(provider, 'dueAt')} AS d FROM "OutboxMessage" WHERE "eventName" = 'order_placed'`,
    );
    const dueAt = new Map(due.map((m) => [m.sourceId, Number(m.d)]));
    const orders = [...sentAt.keys()].flatMap((id) => {
      const ev = log.bySource.get(id)?.find((e) => e.eventName === 'order_placed');
      const d = dueAt.get(id);
      return ev && d !== undefined ? [{ id, sent: sentAt.get(id)!, due: d, accepted: ev.receivedAt }] : [];
    });
    const latencies = orders.map((o) => o.accepted - o.due);
    const e2e = orders.map((o) => o.accepted - o.sent);
    const stages = await stageBreakdown(db, 'restock-order-', sentAt, log);
    const duringQueueing = orders.filter((o) => o.sent <= lastQueued);

    const restockEvents = log.all.filter((e) => e.eventName === 'back_in_stock');
    const sends = (await emulator.requests([ws!.id])).filter((r) => r.path.includes('/webhook/send'));
    const firstRestock = Math.min(...restockEvents.map((e) => e.receivedAt));
    const accepted = sends.filter((r) => r.status === 200).map((r) => r.at);
    const drain = accepted.filter((at) => at >= firstRestock && at < windowEnd);
    const rate = (from: number, to: number) => accepted.filter((at) => at >= from && at < to).length / ((to - from) / 1000) / LIMIT;
    const tens = Array.from(
      { length: Math.ceil(SECONDS / 10) },
      (_, k) => accepted.filter((at) => at >= t200 + k * 10_000 && at < Math.min(windowEnd, t200 + (k + 1) * 10_000)).length,
    );
    const busiest = busiestSecond(sends.map((r) => r.at));
    // the same sends as the app timed them (each attempt's start): bunching the app did not make is
    // the transit's or the emulator's
    const attempts = await db.query<{ s: number }>(`SELECT ${epochMs(provider, 'startedAt')} AS s FROM "DeliveryAttempt"`);
    const appBusiest = busiestSecond(attempts.map((a) => Number(a.s)));
    const pacer: Record<string, number> = {};
    for (const counts of await Promise.all(apps.map((a) => pacerEvents(a.url))))
      for (const [k, v] of Object.entries(counts)) pacer[k] = (pacer[k] ?? 0) + v;
    const slowest = orders.reduce((a, o) => (o.accepted - o.due > a.accepted - a.due ? o : a), orders[0]!);
    const byName = (name: string) => log.all.filter((e) => e.eventName === name && e.receivedAt >= t200 && e.receivedAt < windowEnd).length;

    // a chunk has committed before the next one starts: start to start is its time, exactly, on the
    // app's clock; the last one's ends when the poll first saw it
    const durations = chunks.map((c, i) => (chunks[i + 1]?.start ?? Math.min(c.committed, lastQueued)) - c.start);
    const reads = chunks.map((c) => c.inserted - c.start);
    const lagNames = split ? ['web', 'worker', 'worker'] : ['all'];
    const notes = [
      `variants/in_stock answered in ${t200 - restockSent} ms, the products/update after it in ${fmt(updateAnswered, 0)} ms; the signal row seen ${fmt(progress.seen! - t200, 0)} ms after the 200 (stage 2), its first chunk began ${fmt(chunks[0]!.start - t200, 0)} ms after the 200 (the Admin API read of the variant and the product between), the last of ${queued} queued by ${fmt(lastQueued - t200, 0)} ms (the poll saw it at ${fmt(progress.steps.at(-1)![0] - t200, 0)} ms, its reads at most ${progress.maxGap} ms apart; the runner ended the signal at ${fmt(Number(signal?.u) - t200, 0)} ms, "${progress.note}")`,
      `${chunks.length} chunk(s) of up to 500, each from its start to the next one's (the last: to the earlier of the poll's sighting and the signal's end): p50 / max ${fmt(percentile(durations, 50), 0)} / ${fmt(Math.max(...durations), 0)} ms, of which start → insert (the reads, the marks, the mapping) p50 / max ${fmt(percentile(reads, 50), 0)} / ${fmt(Math.max(...reads), 0)} ms; per chunk ms: ${durations.map((d) => fmt(d, 0)).join(', ')}`,
      `outbox: ${outboxRows!.n} back_in_stock rows for ${outboxRows!.emails} distinct emails (${SUBSCRIBERS} subscribers)`,
      `orders: ${orders.length} of ${SECONDS} delivered (${missing} missing); sent → accepted p50 / p99 / max ${fmt(percentile(e2e, 50), 0)} / ${fmt(percentile(e2e, 99), 0)} / ${fmt(Math.max(...e2e), 0)} ms; p99 ms of sent → stored ${fmt(percentile(stages.stored, 99), 0)}, stored → processed by stage 2 ${fmt(percentile(stages.processed, 99), 0)}, processed → accepted ${fmt(percentile(stages.delivered, 99), 0)}; the ${duringQueueing.length} sent while the runner queued: due → accepted ${duringQueueing.map((o) => fmt(o.accepted - o.due, 0)).join(', ') || 'none'} ms, sent → accepted ${duringQueueing.map((o) => fmt(o.accepted - o.sent, 0)).join(', ') || 'none'} ms`,
      `the slowest order sent ${fmt((slowest.sent - t200) / 1000, 1)} s after the 200`,
      `sends in the window: ${byName('order_placed')} order_placed, ${byName('back_in_stock')} back_in_stock, ${byName('product_ordered')} product_ordered; first back_in_stock accepted ${fmt(firstRestock - t200, 0)} ms after the 200; pace ÷ limit while the runner queued ${fmt(rate(firstRestock, lastQueued), 3)}, after it ${fmt(rate(lastQueued, windowEnd), 3)}; accepted per 10 s from the 200: ${tens.join(', ')}; 429s at ${
        sends
          .filter((r) => r.status === 429)
          .map((r) => `${fmt((r.at - t200) / 1000, 1)} s`)
          .join(', ') || 'none'
      }; the busiest second (${busiest.n}) from ${fmt((busiest.at - t200) / 1000, 1)} s, by the app's own attempt starts ${appBusiest.n} from ${fmt((appBusiest.at - t200) / 1000, 1)} s; the pacer's counts (all processes, from their start): ${Object.entries(
        pacer,
      )
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
      `event-loop delay p99 / max ms from the restock to its end: ${lagQueueing.map((l, i) => `${lagNames[i]} ${fmt(l.p99, 0)} / ${fmt(l.max, 0)}`).join(', ')}; the emulator's over the window ${fmt(emulatorLag.p99, 0)} / ${fmt(emulatorLag.max, 0)}; load average (1 min) ${fmt(loadBefore, 2)} at the restock, ${fmt(loadAfter, 2)} at the window's end`,
    ];
    return {
      provider,
      deployment: split ? '1 web + 2 workers' : 'ROLE=all',
      queuedMs: lastQueued - t200,
      queued,
      chunks,
      pace: drain.length / ((windowEnd - firstRestock) / 1000) / LIMIT,
      r429: sends.filter((r) => r.status === 429).length,
      maxWindow: busiest.n,
      orders: orders.length,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: Math.max(...latencies),
      e2eP99: percentile(e2e, 99),
      e2eMax: Math.max(...e2e),
      delivered: byName('back_in_stock'),
      sentTwice: restockEvents.length - new Set(restockEvents.map((e) => e.sourceId)).size,
      notes,
    };
  } finally {
    await Promise.all(apps.map((a) => a.stop()));
    await fake.close();
    await db.drop();
  }
}

export async function runRestock(): Promise<void> {
  const providers = await providersFromArgs();
  heading(
    'A restock of a popular variant beside order confirmations',
    `One workspace at its real limit (${LIMIT}/s); a connected shop with read_products granted and ${SUBSCRIBERS.toLocaleString('en')} notify-me subscribers of one sold-out variant (inserted in bulk). After one order delivered to warm the processes, the restock as Shopify sends it (the fake shop's variants/in_stock, then products/update, signed, to POST /webhooks), and from 250 ms after its 200 one orders/create a second for ${SECONDS} s. "Queued" is from the variants/in_stock 200 to the last back_in_stock counted in the ProductSignal row: the earlier of a poll's first sighting (every ${POLL_MS} ms, on a connection of its own) and the runner's end of the signal. Order latency is from due (stored by stage 2) to accepted by the emulator, as \`priority\` measures it. Pace is accepted sends a second ÷ the limit from the first back_in_stock accepted to the end of the ${SECONDS} s; "max in 1 s" is the most sends (any status) in any sliding second. Delivered is back_in_stock accepted within the ${SECONDS} s; sent twice is back_in_stock events received minus distinct recipients (source ids).`,
  );
  const rows: Array<Array<string | number>> = [];
  const notes: string[] = [];
  for (const provider of providers) {
    for (const split of provider === 'postgres' ? [false, true] : [false]) {
      const emulator = await startEmulator({ rateLimit: LIMIT });
      try {
        const r = await scenario(provider, emulator, split);
        const miss = r.p99 > ORDER_P99_MS || r.max > ORDER_MAX_MS;
        rows.push([
          r.provider,
          r.deployment,
          `${r.queued.toLocaleString('en')} in ${fmt(r.queuedMs / 1000, 2)} s (${r.chunks.length} chunks)`,
          `${miss ? '✗ ' : ''}${fmt(r.p50, 0)} / ${fmt(r.p99, 0)} / ${fmt(r.max, 0)} (${r.orders})`,
          `${fmt(r.e2eP99, 0)} / ${fmt(r.e2eMax, 0)}`,
          `${r.pace < 0.95 ? '✗ ' : ''}${fmt(r.pace, 3)}`,
          r.r429,
          `${r.maxWindow > LIMIT ? '✗ ' : ''}${r.maxWindow} (limit ${LIMIT})`,
          r.delivered,
          r.sentTwice,
        ]);
        notes.push(`- ${r.provider}, ${r.deployment}: ${r.notes.join('; ')}.`);
      } finally {
        await emulator.close();
      }
    }
  }
  console.log(
    `Targets (those of \`priority\`): order p99 ≤ ${ORDER_P99_MS.toLocaleString('en')} ms and max ≤ ${ORDER_MAX_MS.toLocaleString('en')} ms from due to accepted; pace ≥ 0.95; no 429; never more than the limit in a second; nothing sent twice. The time to queue has no target of its own.\n`,
  );
  console.log(
    table(
      [
        'database',
        'deployment',
        'queued after the 200',
        'order due → accepted p50 / p99 / max ms (orders)',
        'order sent → accepted p99 / max ms',
        'pace ÷ limit',
        '429s',
        'max in 1 s',
        'back_in_stock delivered',
        'sent twice',
      ],
      rows,
    ),
  );
  console.log(`\n${notes.join('\n')}`);
}

if (require.main === module) runMain(runRestock);
