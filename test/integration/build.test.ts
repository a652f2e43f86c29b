// One build serves both databases (issue 14, part 3): `scripts/build.mjs` runs once, into a
// private out dir (never the shared dist/), and that compiled app (node <out>/src/main.js, no tsx)
// is started on SQLite and on PostgreSQL: it applies the migrations shipped in <out>/prisma,
// installs a shop (token exchange with the fake Shopify), takes its key (service emulator) and
// delivers a signed orders/create. Every child process runs with a guard that refuses any
// connection off this machine, so "offline" is checked, not assumed.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { startFakeShop, type FakeShop } from '../../sandbox/fake-shop';
import { sampleOrder } from '../../sandbox/samples';
import { startServiceEmulator, type ServiceEmulator } from '../../sandbox/service-emulator';

const root = path.resolve(__dirname, '..', '..');
const API_KEY = 'build-client-id';
const API_SECRET = 'build-client-secret-0123456789';
const PG_URL = /^postgres(ql)?:\/\//i.test(process.env.DATABASE_URL ?? '')
  ? process.env.DATABASE_URL!
  : 'postgresql://postgres@127.0.0.1:5432/postgres';

/** Whether a PostgreSQL server answers, asked synchronously so the skip shows in the test's name. */
function pgUnreachableReason(): string | null {
  const probe = `const pg = require('pg'); const c = new pg.Client({ connectionString: process.argv[1], connectionTimeoutMillis: 3000 });
    c.connect().then(() => c.end()).then(() => process.exit(0), (e) => { console.error(e.message); process.exit(1); });`;
  const r = spawnSync(process.execPath, ['-e', probe, PG_URL], { cwd: root, encoding: 'utf8', timeout: 10_000 });
  return r.status === 0
    ? null
    : `no PostgreSQL server answers at ${PG_URL.replace(/\/\/[^@]*@/, '//')}: ${(r.stderr || 'timed out').trim().split('\n')[0]}`;
}
const pgSkip = pgUnreachableReason();

// Preloaded into every child: any TCP connection to a host that is not loopback, and any DNS
// lookup of a name other than localhost, is refused and said so on stderr (which the test reads).
const NETWORK_GUARD = `
const net = require('node:net');
const dns = require('node:dns');
const local = (h) => h === undefined || h === null || /^(localhost|127(\\.\\d+){3}|::1|::ffff:127(\\.\\d+){3})$/i.test(String(h));
const refuse = (what) => { const m = 'NETWORK REFUSED: ' + what; process.stderr.write(m + '\\n'); return new Error(m); };
const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  let first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const o = typeof first === 'object' && first !== null ? first : { port: first, host: typeof args[1] === 'string' ? args[1] : undefined };
  if (!o.path && !local(o.host)) {
    const err = refuse(o.host + ':' + o.port);
    process.nextTick(() => this.destroy(err));
    return this;
  }
  return connect.apply(this, args);
};
for (const target of [dns, dns.promises]) {
  const lookup = target.lookup;
  target.lookup = function (host, ...rest) {
    // an address literal (0.0.0.0 to listen on) needs no query; a name other than localhost does
    if (!local(host) && net.isIP(String(host)) === 0) {
      const err = refuse('dns ' + host);
      const cb = rest.find((a) => typeof a === 'function');
      if (cb) return process.nextTick(() => cb(err));
      return Promise.reject(err);
    }
    return lookup.call(this, host, ...rest);
  };
}
`;

interface Child {
  url: string;
  log(): string;
  stop(): Promise<void>;
}

describe('one build serves both databases', () => {
  let tmp: string;
  let out: string;
  let guard: string;
  let emulator: ServiceEmulator;
  let shop: FakeShop;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'connector-build-'));
    out = path.join(tmp, 'dist');
    // the artifact beside the installed dependencies, as in an image: node_modules, then dist/
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(tmp, 'node_modules'), 'dir');
    guard = path.join(tmp, 'no-network.cjs');
    fs.writeFileSync(guard, NETWORK_GUARD);
    const build = await run(process.execPath, [path.join(root, 'scripts', 'build.mjs'), '--out-dir', out, '--reuse-clients'], {
      cwd: root,
    });
    if (build.code !== 0) throw new Error(`build failed (${build.code}):\n${build.output.slice(-3000)}`);
    [emulator, shop] = await Promise.all([
      startServiceEmulator({ host: '127.0.0.1' }),
      startFakeShop({ apiKey: API_KEY, apiSecret: API_SECRET, host: '127.0.0.1', shops: [] }),
    ]);
  }, 90_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all([emulator?.close(), shop?.close()]);
    if (tmp) {
      fs.unlinkSync(path.join(tmp, 'node_modules')); // the link, never what it points at
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  function env(databaseUrl: string): Record<string, string> {
    return {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'test',
      SANDBOX: '1',
      PORT: '0',
      LOG_LEVEL: 'info',
      DATABASE_URL: databaseUrl,
      SHOPIFY_API_KEY: API_KEY,
      SHOPIFY_API_SECRET: API_SECRET,
      SERVICE_BASE_URL: emulator.url,
      SHOPIFY_ADMIN_ORIGIN: shop.url,
      SERVICE_TIMEOUT_MS: '2000',
    };
  }

  /** The built app, started as `npm start` does (node dist/src/main.js), from a directory holding only the build. */
  async function startBuilt(databaseUrl: string): Promise<Child> {
    const logFile = path.join(tmp, `app-${children.length}.log`);
    const fd = fs.openSync(logFile, 'a');
    const child = spawn(process.execPath, ['--require', guard, path.join(out, 'src', 'main.js')], {
      cwd: tmp,
      env: env(databaseUrl),
      stdio: ['ignore', fd, fd],
    });
    fs.closeSync(fd);
    children.push(child);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const log = () => fs.readFileSync(logFile, 'utf8');
    for (const end = Date.now() + 20_000; ;) {
      const m = log().match(/"port":(\d+)[^\n]*connector listening/);
      if (m) {
        return {
          url: `http://127.0.0.1:${m[1]}`,
          log,
          stop: async () => {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
            await exited;
          },
        };
      }
      if (child.exitCode !== null || Date.now() > end) {
        child.kill('SIGKILL');
        throw new Error(`the built app did not start:\n${log().slice(-3000)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The shipped migrations (name → sha256), read from the build's own copy. */
  function shippedMigrations(provider: 'sqlite' | 'postgres'): Record<string, string> {
    const dir = path.join(out, 'prisma', provider, 'migrations');
    return Object.fromEntries(
      fs
        .readdirSync(dir, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => [
          d.name,
          createHash('sha256')
            .update(fs.readFileSync(path.join(dir, d.name, 'migration.sql'), 'utf8'))
            .digest('hex'),
        ]),
    );
  }

  /** Installs and connects a shop on the running app, sends a signed orders/create, waits for the event. */
  async function connectAndDeliver(app: Child, domain: string): Promise<void> {
    shop.addShop({ domain, id: String(910_000 + Math.floor(Math.random() * 89_999)), name: domain.split('.')[0]! });
    const ws = emulator.createWorkspace({ name: `Workspace of ${domain}` });
    const res = await fetch(`${app.url}/api/connection`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${shop.mintSessionToken(domain)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: ws.apiKey }),
    });
    expect({ status: res.status, body: await res.text() }).toMatchObject({ status: 200 });
    // installed by token exchange with the fake Shopify, keyed by the emulator
    expect(shop.tokenStats(domain).exchanges).toBeGreaterThanOrEqual(1);
    const order = sampleOrder(4242);
    const hook = await shop.sendWebhook(app.url, {
      topic: 'orders/create',
      shopDomain: domain,
      payload: order,
      webhookId: `build-${domain}`,
    });
    expect(hook.status).toBe(200);
    for (const end = Date.now() + 15_000; ;) {
      const events = emulator.events({ workspaceId: ws.id, eventName: 'order_placed' });
      if (events.length > 0) {
        expect(events[0]!.event_attribute).toMatchObject({ order_id: String(order.id), shop_domain: domain });
        return;
      }
      if (Date.now() > end) throw new Error(`no order_placed reached the service for ${domain}:\n${app.log().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('the build is self-contained and the network guard works', async () => {
    // nothing but the build (and the installed dependencies) where the app runs
    expect(fs.readdirSync(tmp).sort()).toEqual(['dist', 'no-network.cjs', 'node_modules']);
    for (const f of ['src/main.js', 'src/migrate.js', 'src/admin-ui/index.html']) expect(fs.existsSync(path.join(out, f))).toBe(true);
    expect(Object.keys(shippedMigrations('sqlite')).length).toBeGreaterThan(0);
    expect(Object.keys(shippedMigrations('postgres')).length).toBeGreaterThan(0);
    // the guard refuses a connection off this machine (so a passing run means none was made)
    const probe = await run(
      process.execPath,
      ['--require', guard, '-e', "fetch('http://example.com/').then(() => console.log('reached'), () => console.log('failed'))"],
      { cwd: tmp },
    );
    expect(probe.output).toContain('NETWORK REFUSED: example.com');
    expect(probe.output).not.toContain('reached');
  });

  it('SQLite: db:migrate from the build, then the built app connects a shop and delivers an order', async () => {
    const url = `file:${path.join(tmp, 'data', 'app.db')}`;
    const shipped = shippedMigrations('sqlite');
    // what `npm run db:migrate` runs once built
    const migrate = await run(process.execPath, ['--require', guard, path.join(out, 'src', 'migrate.js')], { cwd: tmp, env: env(url) });
    expect(migrate.output).toContain(`applied ${Object.keys(shipped).length} migration(s)`);
    expect(migrate.output).not.toContain('NETWORK REFUSED');
    const db = new Database(path.join(tmp, 'data', 'app.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL').all() as Array<{
        migration_name: string;
        checksum: string;
      }>;
      expect(Object.fromEntries(rows.map((r) => [r.migration_name, r.checksum]))).toEqual(shipped);
    } finally {
      db.close();
    }
    const app = await startBuilt(url);
    try {
      expect(app.log()).toMatch(/"database":"sqlite"[^\n]*connector listening/);
      await connectAndDeliver(app, 'built-sqlite.myshopify.com');
    } finally {
      await app.stop();
    }
    expect(app.log()).not.toContain('NETWORK REFUSED');
  }, 60_000);

  (pgSkip ? it.skip : it)(
    `PostgreSQL: the same build migrates at start, connects a shop and delivers an order${pgSkip ? ` (skipped: ${pgSkip})` : ''}`,
    async () => {
      const name = `build_${Date.now().toString(36)}_${process.pid}`;
      const admin = new pg.Client({ connectionString: PG_URL });
      await admin.connect();
      await admin.query(`CREATE DATABASE "${name}"`);
      const u = new URL(PG_URL);
      u.pathname = `/${name}`;
      try {
        const app = await startBuilt(u.toString());
        try {
          expect(app.log()).toMatch(/"database":"postgres"[^\n]*connector listening/);
          const c = new pg.Client({ connectionString: u.toString() });
          await c.connect();
          try {
            const rows = (
              await c.query<{ migration_name: string; checksum: string }>(
                'SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL',
              )
            ).rows;
            expect(Object.fromEntries(rows.map((r) => [r.migration_name, r.checksum]))).toEqual(shippedMigrations('postgres'));
          } finally {
            await c.end();
          }
          await connectAndDeliver(app, 'built-postgres.myshopify.com');
        } finally {
          await app.stop();
        }
        expect(app.log()).not.toContain('NETWORK REFUSED');
      } finally {
        await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await admin.end();
      }
    },
    60_000,
  );
});

function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env?: Record<string, string> },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}
