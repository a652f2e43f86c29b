// Shared pieces of the benchmarks: databases, the app as a child process, shop connection,
// statistics and table printing. The benchmark processes themselves never load Prisma unless
// they say so (see prisma-client.ts), so one run can measure SQLite and PostgreSQL.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { createHmac } from 'node:crypto';
import Database from 'better-sqlite3';
import type autocannon from 'autocannon';
import pg from 'pg';
import { startFakeShop, type FakeShop } from '../src/sandbox/fake-shop';
import { sampleOrder } from '../src/sandbox/samples';
import type { ServiceEmulator } from '../src/sandbox/service-emulator';
import { clientDirFor, root, type Provider } from './prisma-client';

export type { Provider };
export const API_KEY = 'bench-client-id';
export const API_SECRET = 'bench-client-secret-0123456789';
export const PG_URL = process.env.BENCH_PG_URL ?? process.env.PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

// USER_HZ: 100 on Linux for every architecture the app runs on
const CLOCK_TICKS = 100;

/** The app's event-loop delay since the previous scrape (prom-client resets it on each), in ms. */
export async function eventLoopLag(appUrl: string): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${appUrl}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^${name} ([0-9.eE+-]+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return { p99: read('nodejs_eventloop_lag_p99_seconds'), max: read('nodejs_eventloop_lag_max_seconds') };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

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
  /** Row count of a table, read with the bare driver (no Prisma). */
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
    db = {
      provider,
      url,
      count: async (table, where) => {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        try {
          return Number((await c.query(`SELECT count(*) AS n FROM "${table}"${where ? ` WHERE ${where}` : ''}`)).rows[0].n);
        } finally {
          await c.end();
        }
      },
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
    db = {
      provider,
      url: `file:${file}`,
      count: async (table, where) => {
        const d = new Database(file, { readonly: true, timeout: 10_000 });
        try {
          return Number((d.prepare(`SELECT count(*) AS n FROM "${table}"${where ? ` WHERE ${where}` : ''}`).get() as { n: number }).n);
        } finally {
          d.close();
        }
      },
      drop: async () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  }
  // required here, not imported: src/db/migrate loads @prisma/client, which a process must
  // resolve only after choosing its client (see prisma-client.ts)
  const { applyMigrations } = require('../src/db/migrate') as typeof import('../src/db/migrate');
  await applyMigrations(db.url);
  return db;
}

export interface ChildServer {
  url: string;
  pid: number;
  child: ChildProcess;
  /** Resident set size now and at its peak (VmHWM), in MB, from /proc. */
  memory(): { rssMb: number; peakMb: number };
  /** CPU time used so far (user + system), in seconds, from /proc. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** Starts a TypeScript entry (bench/app-process.ts, bench/bare-server.ts) as a child process. */
export async function startChild(entry: string, env: Record<string, string>, name = path.basename(entry)): Promise<ChildServer> {
  const logFile = path.join(os.tmpdir(), `connector-bench-${name}-${process.pid}.log`);
  const log = fs.openSync(logFile, 'w');
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", to profile the servers
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', path.join(root, 'bench', entry)], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', log],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start in 30 s; see ${logFile}`)), 30_000);
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
  const cpuSeconds = () => {
    // fields after the command name: state is 3rd, utime 14th, stime 15th (1-based, whole line)
    const stat = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / CLOCK_TICKS;
  };
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    child,
    memory,
    cpuSeconds,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const force = setTimeout(() => child.kill('SIGKILL'), 25_000);
      await exited;
      clearTimeout(force);
    },
  };
}

/** Samples the child's RSS every 250 ms while `during` runs; returns the peak (MB). */
export async function peakRss<T>(app: ChildServer, during: Promise<T>): Promise<{ value: T; peakMb: number }> {
  let peak = app.memory().rssMb;
  let done = false;
  const sampler = (async () => {
    while (!done) {
      peak = Math.max(peak, app.memory().rssMb);
      await sleep(250);
    }
  })();
  try {
    return { value: await during, peakMb: peak };
  } finally {
    done = true;
    await sampler;
  }
}

/** The connector as a child process on `db` (with a private Prisma client when needed). */
export function startApp(db: BenchDatabase, env: Record<string, string> = {}): Promise<ChildServer> {
  const dir = clientDirFor(db.provider);
  return startChild('app-process.ts', {
    DATABASE_URL: db.url,
    SHOPIFY_API_KEY: API_KEY,
    SHOPIFY_API_SECRET: API_SECRET,
    ...(dir ? { BENCH_PRISMA_CLIENT_DIR: dir } : {}),
    ...env,
  }, `app-${db.provider}`);
}

export function startFakeShopFor(domains: string[]): Promise<FakeShop> {
  return startFakeShop({ apiKey: API_KEY, apiSecret: API_SECRET, host: '127.0.0.1', shops: domains.map((domain, i) => ({ domain, id: String(800_000 + i), name: domain.split('.')[0] })) });
}

/** Installs `domain` (token exchange through the fake shop) and connects it to a new workspace. */
export async function connectShop(appUrl: string, shop: FakeShop, emulator: ServiceEmulator, domain: string, rateLimit?: number): Promise<{ workspaceId: string; apiKey: string }> {
  if (!shop.getShop(domain)) shop.addShop({ domain, id: String(900_000 + Math.floor(Math.random() * 99_999)), name: domain.split('.')[0] });
  const ws = emulator.createWorkspace({ name: `Workspace of ${domain}`, rateLimit });
  const res = await fetch(`${appUrl}/api/connection`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${shop.mintSessionToken(domain)}`, 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: ws.apiKey }),
  });
  if (res.status !== 200) throw new Error(`connecting ${domain} failed: ${res.status} ${await res.text()}`);
  return { workspaceId: ws.id, apiKey: ws.apiKey };
}

/**
 * `count` distinct orders/create webhooks for `domain`, each body signed once; the webhook id
 * header is autocannon's `[<id>]` placeholder, so with idReplacement every request is new.
 */
export function signedOrderRequests(domain: string, count = 200): autocannon.Request[] {
  return Array.from({ length: count }, (_, n) => {
    const body = JSON.stringify(sampleOrder(n));
    return {
      method: 'POST',
      path: '/webhooks',
      body,
      headers: {
        'content-type': 'application/json',
        'x-shopify-topic': 'orders/create',
        'x-shopify-shop-domain': domain,
        'x-shopify-api-version': '2026-10',
        'x-shopify-webhook-id': 'bench-[<id>]',
        'x-shopify-hmac-sha256': createHmac('sha256', API_SECRET).update(body).digest('base64'),
      },
    };
  });
}

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
