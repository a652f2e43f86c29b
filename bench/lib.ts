// Shared pieces of the benchmarks: databases, the app and the service emulator as child
// processes, shops seeded in bulk, signed webhooks, statistics and table printing.
// Both Prisma clients are generated at install (src/db/client.ts picks one from the URL), so a
// benchmark process may open either database with createDb.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import type autocannon from 'autocannon';
import pg from 'pg';
import { DEFAULT_SCOPES, SANDBOX_DEFAULTS } from '../src/config';
import type { Db } from '../src/db/client';
import { sampleOrder } from '../sandbox/samples';

export type Provider = 'sqlite' | 'postgres';
export const root = path.resolve(__dirname, '..');
export const API_KEY = 'bench-client-id';
export const API_SECRET = 'bench-client-secret-0123456789';
/** The app's key for secrets at rest; the seeding encrypts connections with it. */
export const ENCRYPTION_KEY = SANDBOX_DEFAULTS.ENCRYPTION_KEY;
export const PG_URL = process.env.BENCH_PG_URL ?? process.env.PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

// USER_HZ: 100 on Linux for every architecture the app runs on
const CLOCK_TICKS = 100;

/** The app's event-loop delay since the previous scrape (prom-client resets it on each), in ms. */
export async function eventLoopLag(appUrl: string): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${appUrl}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^${name} ([0-9.eE+-]+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return { p99: read('nodejs_eventloop_lag_p99_seconds'), max: read('nodejs_eventloop_lag_max_seconds') };
}

/** The app's connector_pacer_events_total by event (sent, late, slowed, rate_limited). */
export async function pacerEvents(appUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${appUrl}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^connector_pacer_events_total\{event="(\w+)"\} ([0-9.eE+-]+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/** `--db sqlite|postgres|both` (default both); PostgreSQL is left out, with a note, when unreachable. */
export async function providersFromArgs(argv = process.argv.slice(2)): Promise<Provider[]> {
  const i = argv.indexOf('--db');
  const want = i >= 0 ? argv[i + 1] : 'both';
  const list: Provider[] = want === 'sqlite' ? ['sqlite'] : want === 'postgres' ? ['postgres'] : ['sqlite', 'postgres'];
  if (list.includes('postgres') && !(await pgReachable())) {
    console.log(`(PostgreSQL at ${PG_URL.replace(/\/\/[^@]*@/, '//')} is not reachable: its rows are left out)`);
    return list.filter((p) => p !== 'postgres');
  }
  return list;
}

async function pgReachable(): Promise<boolean> {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

export interface BenchDatabase {
  provider: Provider;
  url: string;
  /** A read with the bare driver (no Prisma). PostgreSQL's $1.. and SQLite's ? are both accepted as written. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Row count of a table. */
  count(table: string, where?: string): Promise<number>;
  drop(): Promise<void>;
}

/** A fresh, migrated database: a temp SQLite file, or a new database on the PostgreSQL server. */
export async function createBenchDatabase(provider: Provider): Promise<BenchDatabase> {
  const name = `bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  let db: BenchDatabase;
  if (provider === 'postgres') {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name}"`);
    await admin.end();
    const u = new URL(PG_URL);
    u.pathname = `/${name}`;
    const url = u.toString();
    const query = async <R>(sql: string, params: unknown[] = []) => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        return (await c.query(sql, params)).rows as R[];
      } finally {
        await c.end();
      }
    };
    db = {
      provider,
      url,
      query,
      count: async (table, where) =>
        Number((await query<{ n: string }>(`SELECT count(*) AS n FROM "${table}"${where ? ` WHERE ${where}` : ''}`))[0]!.n),
      drop: async () => {
        const c = new pg.Client({ connectionString: PG_URL });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await c.end();
      },
    };
  } else {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'connector-bench-'));
    const file = path.join(dir, `${name}.db`);
    const query = async <R>(sql: string, params: unknown[] = []) => {
      const d = new Database(file, { readonly: true, timeout: 10_000 });
      try {
        return d.prepare(sql).all(...params) as R[];
      } finally {
        d.close();
      }
    };
    db = {
      provider,
      url: `file:${file}`,
      query,
      count: async (table, where) =>
        Number((await query<{ n: number }>(`SELECT count(*) AS n FROM "${table}"${where ? ` WHERE ${where}` : ''}`))[0]!.n),
      drop: async () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  }
  const { applyMigrations } = await import('../src/db/migrate');
  await applyMigrations(db.url);
  return db;
}

/** A timestamp column as epoch ms, in SQL: SQLite stores epoch ms, PostgreSQL a timestamp. */
export function epochMs(provider: Provider, column: string): string {
  return provider === 'postgres' ? `(EXTRACT(EPOCH FROM "${column}") * 1000)::float8` : `"${column}"`;
}

export interface ChildServer {
  url: string;
  pid: number;
  child: ChildProcess;
  logFile: string;
  /** Resident set size now and at its peak (VmHWM), in MB, from /proc. */
  memory(): { rssMb: number; peakMb: number };
  /** CPU time used so far (user + system), in seconds, from /proc. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** CPU seconds (user + system) of a process so far, from /proc/<pid>/stat. */
export function cpuSecondsOf(pid: number): number {
  // fields after the command name: state is 3rd, utime 14th, stime 15th (1-based, whole line)
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / CLOCK_TICKS;
}

/** Starts a TypeScript entry (bench/app-process.ts, bench/bare-server.ts) as a child process. */
export async function startChild(entry: string, env: Record<string, string>, name = path.basename(entry)): Promise<ChildServer> {
  const logFile = path.join(os.tmpdir(), `connector-bench-${name}-${process.pid}-${randomBytes(2).toString('hex')}.log`);
  const log = fs.openSync(logFile, 'w');
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", to profile the servers
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', path.join(root, 'bench', entry)], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'test',
      SANDBOX: '1',
      PORT: '0',
      LOG_LEVEL: 'warn',
      // the diagnostic preload's output (bench/count-queries.cjs), when asked for
      ...(process.env.QUERY_COUNT_FILE ? { QUERY_COUNT_FILE: process.env.QUERY_COUNT_FILE } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', log],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start in 60 s; see ${logFile}`)), 60_000);
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}: ${fs.readFileSync(logFile, 'utf8').slice(-1500)}`)));
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const msg = JSON.parse(line) as { ready?: boolean; port?: number };
        if (msg.ready && msg.port) {
          clearTimeout(timer);
          resolve(msg.port);
        }
      } catch {
        // a log line: ignore
      }
    });
  });
  const memory = () => {
    const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
  };
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    child,
    logFile,
    memory,
    cpuSeconds: () => cpuSecondsOf(child.pid!),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const force = setTimeout(() => child.kill('SIGKILL'), 25_000);
      await exited;
      clearTimeout(force);
    },
  };
}

/** Samples the children's RSS every 250 ms while `during` runs; returns the peak (MB) of each. */
export async function peakRss<T>(
  apps: ChildServer | ChildServer[],
  during: Promise<T>,
): Promise<{ value: T; peakMb: number; peaks: number[] }> {
  const list = Array.isArray(apps) ? apps : [apps];
  const peaks = list.map((a) => a.memory().rssMb);
  let done = false;
  const sampler = (async () => {
    while (!done) {
      list.forEach((a, i) => {
        try {
          peaks[i] = Math.max(peaks[i]!, a.memory().rssMb);
        } catch {
          // exited meanwhile
        }
      });
      await sleep(250);
    }
  })();
  try {
    return { value: await during, peakMb: Math.max(...peaks), peaks };
  } finally {
    done = true;
    await sampler;
  }
}

export type Role = 'all' | 'web' | 'worker';

/** The connector as a child process on `db`, in a role (ROLE=web|worker|all). */
export function startApp(db: BenchDatabase, env: Record<string, string> & { ROLE?: Role } = {}): Promise<ChildServer> {
  return startChild(
    'app-process.ts',
    {
      DATABASE_URL: db.url,
      SHOPIFY_API_KEY: API_KEY,
      SHOPIFY_API_SECRET: API_SECRET,
      ENCRYPTION_KEY,
      ...env,
    },
    `app-${db.provider}-${env.ROLE ?? 'all'}`,
  );
}

// ---------------------------------------------------------------------------------------------
// The service emulator in a child process of its own, so that its clock (which decides 429s and
// stamps every request) is not delayed by the load generator's event loop in this process.

export interface EmulatorRequest {
  path: string;
  status: number;
  at: number;
  workspaceId: string | null;
}

export interface EmulatorEvent {
  workspaceId: string;
  eventName: string;
  sourceId: string;
  receivedAt: number;
}

export interface RemoteEmulator {
  url: string;
  pid: number;
  /** Workspaces with their default key, at `rateLimit` requests/s (the emulator's default otherwise). */
  createWorkspaces(count: number, rateLimit?: number): Promise<Array<{ id: string; apiKey: string }>>;
  /** Requests to the service API (not /_sandbox), oldest first, optionally of some workspaces. */
  requests(workspaceIds?: string[]): Promise<EmulatorRequest[]>;
  /** Events received from the n-th on (0: all). */
  eventsSince(n: number): Promise<EmulatorEvent[]>;
  /** The emulator's own event-loop delay since the previous call (ms). */
  loopLag(): Promise<{ p99: number; max: number }>;
  reset(): Promise<void>;
  cpuSeconds(): number;
  close(): Promise<void>;
}

export async function startEmulator(opts: { rateLimit?: number; maxRecordedRequests?: number } = {}): Promise<RemoteEmulator> {
  // BENCH_EMULATOR=in-process runs it in this process instead, to show what sharing the loop does
  if (process.env.BENCH_EMULATOR === 'in-process') return inProcessEmulator(opts);
  const child = fork(path.join(root, 'bench', 'emulator-process.ts'), [], {
    cwd: root,
    execArgv: ['--import', 'tsx'],
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'test',
      EMULATOR_RATE_LIMIT: String(opts.rateLimit ?? 10),
      EMULATOR_MAX_REQUESTS: String(opts.maxRecordedRequests ?? 100_000),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let seq = 0;
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the emulator process did not start in 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`the emulator process exited with ${code}`)));
    child.on('message', (raw) => {
      const msg = raw as { ready?: string; id?: number; result?: unknown; error?: string };
      if (msg.ready) {
        clearTimeout(timer);
        resolve(msg.ready);
        return;
      }
      const w = msg.id !== undefined ? waiting.get(msg.id) : undefined;
      if (!w) return;
      waiting.delete(msg.id!);
      if (msg.error) w.reject(new Error(msg.error));
      else w.resolve(msg.result);
    });
  });
  const call = <R>(op: string, args: unknown = {}): Promise<R> =>
    new Promise<R>((resolve, reject) => {
      const id = ++seq;
      waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      child.send({ id, op, args });
    });
  return {
    url,
    pid: child.pid!,
    createWorkspaces: (count, rateLimit) => call('createWorkspaces', { count, rateLimit }),
    requests: (workspaceIds) => call('requests', { workspaceIds }),
    eventsSince: (n) => call('eventsSince', { n }),
    loopLag: () => call('loopLag'),
    reset: () => call('reset'),
    cpuSeconds: () => cpuSecondsOf(child.pid!),
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

async function inProcessEmulator(opts: { rateLimit?: number; maxRecordedRequests?: number }): Promise<RemoteEmulator> {
  const { startServiceEmulator } = await import('../sandbox/service-emulator');
  const e = await startServiceEmulator({
    host: '127.0.0.1',
    rateLimit: opts.rateLimit ?? 10,
    maxRecordedRequests: opts.maxRecordedRequests ?? 100_000,
  });
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  return {
    url: e.url,
    pid: process.pid,
    createWorkspaces: async (count, rateLimit) =>
      Array.from({ length: count }, () => {
        const ws = e.createWorkspace({ rateLimit });
        return { id: ws.id, apiKey: ws.apiKey };
      }),
    requests: async (workspaceIds) => {
      const only = workspaceIds ? new Set(workspaceIds) : null;
      return e
        .requests()
        .filter((r) => !only || (r.workspaceId !== null && only.has(r.workspaceId)))
        .map((r) => ({ path: r.path, status: r.status, at: r.at, workspaceId: r.workspaceId }));
    },
    eventsSince: async (n) =>
      e
        .events()
        .slice(n)
        .map((ev) => ({
          workspaceId: ev.workspaceId,
          eventName: ev.event_name,
          sourceId: String(ev.event_attribute.source_id),
          receivedAt: ev.receivedAt,
        })),
    loopLag: async () => {
      const out = { p99: lag.percentile(99) / 1e6, max: lag.max / 1e6 };
      lag.reset();
      return out;
    },
    reset: async () => e.reset(),
    cpuSeconds: () => NaN,
    close: async () => {
      lag.disable();
      await e.close();
    },
  };
}

/** Follows the emulator's events, fetching only the new ones on each poll. */
export class EventLog {
  readonly all: EmulatorEvent[] = [];
  readonly bySource = new Map<string, EmulatorEvent[]>();

  constructor(private readonly emulator: RemoteEmulator) {}

  async poll(): Promise<number> {
    const fresh = await this.emulator.eventsSince(this.all.length);
    for (const e of fresh) {
      this.all.push(e);
      const list = this.bySource.get(e.sourceId) ?? [];
      list.push(e);
      this.bySource.set(e.sourceId, list);
    }
    return fresh.length;
  }

  /** Polls until every id has arrived, or the timeout; returns how many are still missing. */
  async waitFor(sourceIds: Iterable<string>, timeoutMs: number): Promise<number> {
    const ids = [...sourceIds];
    const end = Date.now() + timeoutMs;
    for (;;) {
      await this.poll();
      const missing = ids.filter((id) => !this.bySource.has(id)).length;
      if (missing === 0 || Date.now() > end) return missing;
      await sleep(100);
    }
  }

  /** Events received more than once per source id, over these ids (or all). */
  duplicates(sourceIds?: Iterable<string>): number {
    let n = 0;
    const ids = sourceIds ? [...sourceIds] : [...this.bySource.keys()];
    for (const id of ids) n += Math.max(0, (this.bySource.get(id)?.length ?? 0) - 1);
    return n;
  }
}

// ---------------------------------------------------------------------------------------------
// Shops installed and connected in bulk, straight into the database, as installing and
// connecting through the app would leave them: a Shop; its offline Session (the default scopes,
// a non-expiring token encrypted as the session store does, bound to the session id); a
// Connection bound to its workspace, the key encrypted the way src/crypto/secret-box.ts does
// (bound to the shop id), checked just now (so the periodic key check has nothing to do during a
// measurement); and its workspace's pacer row, which connecting makes when it counts the key
// check against the limit (Pacer.record). With the default scopes (no read_products), stage 2
// looks up no product images.

export interface SeedShop {
  domain: string;
  workspaceId: string;
  apiKey: string;
  /** The offline session's scopes; DEFAULT_SCOPES unless given. */
  scope?: string;
  /** The offline access token (one a fake shop issued, for a shop the app asks); a placeholder unless given. */
  accessToken?: string;
}

/** A Prisma client on the bench database for the time of `fn` (close it before the app writes to SQLite). */
export async function withPrisma<T>(db: BenchDatabase, fn: (prisma: Db) => Promise<T>): Promise<T> {
  const { createDb } = await import('../src/db/client');
  const prisma = await createDb(db.url, { poolSize: 4 });
  try {
    return await fn(prisma);
  } finally {
    await prisma.$disconnect();
  }
}

/** Returns shop ids by domain. */
export async function seedShops(db: BenchDatabase, shops: SeedShop[]): Promise<Map<string, string>> {
  const { createSecretBox, keyHint } = await import('../src/crypto/secret-box');
  const box = createSecretBox(Buffer.from(ENCRYPTION_KEY, 'base64'));
  const ids = new Map<string, string>();
  const workspaces = new Set<string>();
  await withPrisma(db, async (prisma) => {
    const now = new Date();
    for (let i = 0; i < shops.length; i += 500) {
      const chunk = shops
        .slice(i, i + 500)
        .map((s, k) => ({ ...s, id: `bench-shop-${i + k}-${randomBytes(3).toString('hex')}`, n: i + k }));
      await prisma.shop.createMany({
        data: chunk.map((s) => ({
          id: s.id,
          domain: s.domain,
          shopifyId: String(800_000 + s.n),
          name: s.domain.split('.')[0],
          tokenStatus: 'active',
          installedAt: now,
          createdAt: now,
          updatedAt: now,
        })),
      });
      await prisma.session.createMany({
        data: chunk.map((s) => {
          const id = `offline_${s.domain}`;
          return {
            id,
            shop: s.domain,
            state: '',
            isOnline: false,
            scope: s.scope ?? DEFAULT_SCOPES,
            accessToken: box.encrypt(s.accessToken ?? `shpat_bench_${s.n}`, id),
          };
        }),
      });
      await prisma.connection.createMany({
        data: chunk.map((s) => ({
          shopId: s.id,
          status: 'connected',
          workspaceId: s.workspaceId,
          workspaceName: `Workspace of ${s.domain}`,
          apiKeyEnc: box.encrypt(s.apiKey, s.id),
          keyHint: keyHint(s.apiKey),
          connectedAt: now,
          lastCheckedAt: now,
          updatedAt: now,
        })),
      });
      const fresh = [...new Set(chunk.map((s) => s.workspaceId))].filter((w) => !workspaces.has(w));
      await prisma.workspacePacer.createMany({
        data: fresh.map((workspaceId) => ({ workspaceId, limitPerSec: 10, nextSendUs: 0n, updatedAt: now })),
      });
      for (const w of fresh) workspaces.add(w);
      for (const s of chunk) ids.set(s.domain, s.id);
    }
  });
  return ids;
}

// ---------------------------------------------------------------------------------------------
// Signed webhooks.

export interface SignedWebhook {
  headers: Record<string, string>;
  body: string;
}

export function signedWebhook(domain: string, topic: string, payload: unknown, webhookId: string): SignedWebhook {
  const body = JSON.stringify(payload);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-shopify-topic': topic,
      'x-shopify-shop-domain': domain,
      'x-shopify-api-version': '2026-10',
      'x-shopify-webhook-id': webhookId,
      'x-shopify-triggered-at': new Date().toISOString(),
      'x-shopify-hmac-sha256': createHmac('sha256', API_SECRET).update(body).digest('base64'),
    },
  };
}

/** POST /webhooks with an orders/create for `domain`; resolves with the status. */
export async function postOrder(appUrl: string, domain: string, n: number, webhookId: string): Promise<number> {
  const w = signedWebhook(domain, 'orders/create', sampleOrder(n), webhookId);
  const res = await fetch(`${appUrl}/webhooks`, { method: 'POST', headers: w.headers, body: w.body });
  await res.arrayBuffer();
  return res.status;
}

/**
 * `count` distinct orders/create webhooks for `domain`, each body signed once; the webhook id
 * header is autocannon's `[<id>]` placeholder, so with idReplacement every request is new.
 */
export function signedOrderRequests(domain: string, count = 200): autocannon.Request[] {
  return Array.from({ length: count }, (_, n) => {
    const w = signedWebhook(domain, 'orders/create', sampleOrder(n), 'bench-[<id>]');
    return { method: 'POST', path: '/webhooks', body: w.body, headers: w.headers };
  });
}

// ---------------------------------------------------------------------------------------------
// Statistics and output.

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

export { maxInWindow } from '../test/helpers/clock';

export const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/** A markdown table. */
export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(3, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(cells[0]!), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...cells.slice(1).map(line)].join('\n');
}

export function heading(title: string, what: string): void {
  console.log(`\n### ${title}\n\n${what}\n`);
}

export function runMain(fn: () => Promise<void>): void {
  fn().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

/** Where an event's time went: stage 1 (sent → stored), stage 2 (stored → processed), delivery (processed → accepted). */
export type Stages = Record<'stored' | 'processed' | 'delivered', number[]>;

/** The stages of the webhooks whose ids start with `prefix`, from their receipts and the emulator's log. */
export async function stageBreakdown(db: BenchDatabase, prefix: string, sentAt: Map<string, number>, events: EventLog): Promise<Stages> {
  const stages: Stages = { stored: [], processed: [], delivered: [] };
  const receipts = await db.query<{ webhookId: string; r: number; p: number | null }>(
    `SELECT "webhookId", ${epochMs(db.provider, 'receivedAt')} AS r, ${epochMs(db.provider, 'processedAt')} AS p FROM "WebhookReceipt" WHERE "webhookId" LIKE '${prefix}%'`,
  );
  for (const row of receipts) {
    const sent = sentAt.get(row.webhookId);
    const ev = events.bySource.get(row.webhookId)?.[0];
    if (sent === undefined || row.p === null || !ev) continue;
    stages.stored.push(Number(row.r) - sent);
    stages.processed.push(Number(row.p) - Number(row.r));
    stages.delivered.push(ev.receivedAt - Number(row.p));
  }
  return stages;
}
