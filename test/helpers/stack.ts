// The whole product over real HTTP, in-process: the app on a fresh database, the service
// emulator and the fake shop. Tests drive it as Shopify and the merchant's browser would.
import fs from 'node:fs';
import path from 'node:path';
import { createLogger } from '../../src/observability/logger';
import { startFakeShop, type FakeShop } from '../../sandbox/fake-shop';
import { startServiceEmulator, type ServiceEmulator, type ServiceEmulatorOptions } from '../../sandbox/service-emulator';
import { startServer, type RunningServer, type StartOptions } from '../../src/app/server';
import { testConfig } from './config';
import { createTestDatabase, type TestDatabase } from './db';

export const API_KEY = 'test-client-id';
export const API_SECRET = 'test-client-secret-0123456789';

export interface Stack {
  app: RunningServer;
  emulator: ServiceEmulator;
  shop: FakeShop;
  database: TestDatabase;
  /** Calls /api/* as the embedded page of `domain` would. */
  api(method: string, route: string, body?: unknown, domain?: string): Promise<{ status: number; body: any; headers: Headers }>;
  /** Installs (token exchange) and connects `domain` to a new emulator workspace; returns its key. */
  connectShop(
    domain?: string,
    opts?: { rateLimit?: number; name?: string },
  ): Promise<{ apiKey: string; workspaceId: string; shopId: string }>;
  /** Sends a signed webhook and, when it was stored, waits until stage 2 has processed it. */
  webhook(topic: string, payload: unknown, opts?: { webhookId?: string; domain?: string }): Promise<{ status: number; body: unknown }>;
  /** Waits until every stored receipt has been processed by stage 2. */
  settle(timeoutMs?: number): Promise<void>;
  /** A fixture parsed (ids beyond 2^53 lose precision here: send raw() when they matter). */
  fixture(name: string): any;
  /** A fixture's exact bytes, as Shopify would send them. */
  raw(name: string): string;
  /** Waits until `check` returns a truthy value, polling. */
  until<T>(check: () => T | Promise<T>, timeoutMs?: number, what?: string): Promise<NonNullable<T>>;
  /** The environment of an app process (test/helpers/process.ts) on this stack's database, emulator and fake shop. */
  childEnv(more?: Record<string, string>): Record<string, string>;
  /** Stops the app and starts it again on the same database, with `env` over the first start's. */
  restart(env?: Record<string, string>, server?: StartOptions): Promise<RunningServer>;
  close(): Promise<void>;
}

export const DEFAULT_SHOP = 'demo-store.myshopify.com';
let counter = 0;

export async function startStack(
  opts: { emulator?: ServiceEmulatorOptions; server?: StartOptions; env?: Record<string, string> } = {},
): Promise<Stack> {
  const database = await createTestDatabase();
  const emulator = await startServiceEmulator({ host: '127.0.0.1', ...opts.emulator });
  const shop = await startFakeShop({
    apiKey: API_KEY,
    apiSecret: API_SECRET,
    host: '127.0.0.1',
    shops: [{ domain: DEFAULT_SHOP, id: '548380009', name: 'Demo Store' }],
  });
  const env = {
    SHOPIFY_API_KEY: API_KEY,
    SHOPIFY_API_SECRET: API_SECRET,
    SERVICE_BASE_URL: emulator.url,
    SHOPIFY_ADMIN_ORIGIN: shop.url,
    SERVICE_TIMEOUT_MS: '2000',
    ...opts.env,
  };
  const start = (more: Record<string, string> = {}, server?: StartOptions) =>
    startServer(testConfig(database.url, { ...env, ...more }), {
      logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
      host: '127.0.0.1',
      worker: { safetyPollMs: 250 },
      ...opts.server,
      ...server,
    });
  let app = await start();

  const stack: Stack = {
    app,
    emulator,
    shop,
    database,
    async api(method, route, body, domain = DEFAULT_SHOP) {
      const res = await fetch(`${app.url}${route}`, {
        method,
        headers: {
          authorization: `Bearer ${shop.mintSessionToken(domain)}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        /* not JSON */
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async connectShop(domain = DEFAULT_SHOP, o = {}) {
      if (!shop.getShop(domain)) shop.addShop({ domain, id: String(700000 + ++counter), name: o.name ?? domain.split('.')[0] });
      const ws = emulator.createWorkspace({ name: `Workspace of ${domain}`, rateLimit: o.rateLimit });
      const res = await stack.api('PUT', '/api/connection', { api_key: ws.apiKey }, domain);
      if (res.status !== 200) throw new Error(`connect failed: ${res.status} ${JSON.stringify(res.body)}`);
      const row = await app.db.shop.findUniqueOrThrow({ where: { domain } });
      return { apiKey: ws.apiKey, workspaceId: ws.id, shopId: row.id };
    },
    async webhook(topic, payload, o = {}) {
      const res = await shop.sendWebhook(app.url, { topic, shopDomain: o.domain ?? DEFAULT_SHOP, payload, webhookId: o.webhookId });
      // a web-only app stores receipts for worker processes: nothing to wait for here
      if (res.status === 200 && app.role !== 'web') await stack.settle();
      return res;
    },
    async settle(timeoutMs = 10_000) {
      await stack.until(async () => (await app.receipts.lag(new Date())).pending === 0, timeoutMs, 'stored receipts to be processed');
    },
    fixture(name) {
      return JSON.parse(stack.raw(name));
    },
    raw(name) {
      return fs.readFileSync(path.join(__dirname, '..', 'fixtures', `${name}.json`), 'utf8');
    },
    async until(check, timeoutMs = 10_000, what = 'condition') {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const v = await check();
        // an empty array means "not yet", like a falsy value
        if (v && !(Array.isArray(v) && v.length === 0)) return v as NonNullable<typeof v>;
        if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    childEnv(more = {}) {
      return {
        DATABASE_URL: database.url,
        SHOPIFY_API_KEY: API_KEY,
        SHOPIFY_API_SECRET: API_SECRET,
        SERVICE_BASE_URL: emulator.url,
        SHOPIFY_ADMIN_ORIGIN: shop.url,
        SERVICE_TIMEOUT_MS: '2000',
        ...more,
      };
    },
    async restart(more, server) {
      await app.close();
      app = await start(more, server);
      stack.app = app;
      return app;
    },
    async close() {
      await app.close();
      await Promise.all([emulator.close(), shop.close()]);
      await database.drop();
    },
  };
  return stack;
}
