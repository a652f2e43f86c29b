// The composition root: builds every concrete dependency from a Config and starts what the
// process's role runs: web (stage 1 intake, admin API, page), worker (stage 2 processing,
// delivery, imports, key checks) or all. main.ts and dev.ts call this; so do process tests.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Router } from 'express';
import { createBackfill, type BackfillModule, type BackfillRunnerDeps } from './backfill';
import type { Config } from './config';
import { createSecretBox } from './crypto/secret-box';
import { createDb, type Db } from './db/client';
import { applyMigrations } from './db/migrate';
import type { SideHandler } from './intake/processor';
import type { ReceiptStore } from './intake/receipt-store';
import type { Intake } from './intake/intake';
import { adminRoutes } from './http/admin.routes';
import { createApp, createHttpServer } from './http/app';
import { authRoutes } from './http/auth.routes';
import { permissionsRoutes } from './http/permissions.routes';
import { sessionTokenMiddleware } from './http/session-token';
import { uiRoutes, type UiRoutesDeps } from './http/ui.routes';
import { webhooksRoute } from './http/webhooks.route';
import { createLogger, type Logger } from './observability/logger';
import { Metrics } from './observability/metrics';
import { createHolds } from './outbox/holds';
import { Pacer } from './outbox/pacer';
import { OutboxRepository } from './outbox/repository';
import type { DeliveryWorker, WorkerDeps } from './outbox/worker';
import type { ReceiptProcessor } from './intake/processor';
import { buildPipeline, type ProcessorTimings } from './pipeline';
import { createServiceClient } from './service/client';
import type { ServiceClient } from './service/types';
import { fetchGrantedScopes } from './shopify/access-scopes';
import { createShopify } from './shopify/api';
import { ensureShopIdentity } from './shopify/install';
import { createProductCatalog } from './shopify/products';
import { createSessionStore } from './shopify/session-storage';
import { createOfflineTokens } from './shopify/tokens';
import { createWebPixels } from './shopify/web-pixel';
import { pixelRoute } from './http/pixel.route';
import { createStorefront } from './pixel';
import { createActivity, DELIVERY_STATUSES } from './use-cases/activity';
import { createConnectionUseCases } from './use-cases/connection';
import { createPermissions } from './use-cases/permissions';
import type { EnrichItems } from './use-cases/forward-receipts';
import { createSettingsUseCases } from './use-cases/settings';

export interface RunningServer {
  url: string;
  role: Config['role'];
  port: number;
  db: Db;
  logger: Logger;
  server: Server;
  worker: DeliveryWorker;
  processor: ReceiptProcessor;
  intake: Intake;
  receipts: ReceiptStore;
  /** Indexes a shop's newly queued messages as due and wakes the delivery workers. */
  notifyQueued(shopId: string, runAt?: Date): void;
  backfill: BackfillModule;
  /** The periodic key check, run on demand (the app runs it every minute). */
  checkKeys(): Promise<{ checked: number; invalid: number }>;
  /** The re-probe of shops held because the service address answered 404, run on demand (the app runs it every minute). */
  reprobeHolds(): Promise<{ held: number; probed: number; released: number }>;
  /** The storefront's expiry sweep, run on demand (the worker runs it every 5 minutes). */
  sweepPixels(): Promise<{ events: number; visitors: number }>;
  /** Graceful: stop accepting, finish in-flight requests and deliveries, close the database. */
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  /** Host to bind; defaults to all interfaces. */
  host?: string;
  /** The clock, for tests (abandoned checkouts, retries). */
  now?: () => Date;
  /** Replaces the service client (tests of odd service behaviour). */
  client?: ServiceClient;
  /** Extra routers mounted after the API. */
  routers?: Router[];
  /** Sandbox extras for the embedded page (simulate panel, links); ignored in production. */
  ui?: Omit<UiRoutesDeps, 'config'>;
  /** Worker timings for tests (safety poll, sweep, lanes, ...). */
  worker?: Partial<Pick<WorkerDeps, 'safetyPollMs' | 'sweepEveryMs' | 'reconcileEveryMs' | 'laneQuantumMs' | 'leaseMs' | 'lanes' | 'recordRetryMs'>>;
  /** Stage-2 timings for tests. */
  processor?: ProcessorTimings;
  /** Timings of the historical-import runner, for tests. */
  backfillRunner?: Partial<BackfillRunnerDeps>;
}

export async function startServer(config: Config, opts: StartOptions = {}): Promise<RunningServer> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const now = opts.now ?? (() => new Date());
  const applied = await applyMigrations(config.databaseUrl);
  if (applied.length) logger.info({ applied }, 'database migrations applied');
  const db = await createDb(config.databaseUrl, { poolSize: config.databasePoolSize, keepConnections: true, onWarning: (message) => logger.warn(message) });
  const metrics = new Metrics({ defaultMetrics: true });
  metrics.onScrape(async (set) => {
    const rows = await db.outboxMessage.groupBy({ by: ['status'], _count: { _all: true } });
    for (const s of DELIVERY_STATUSES) set(s, 0);
    for (const r of rows) set(r.status, r._count._all);
  });

  const secrets = createSecretBox(config.encryption.key, config.encryption.previousKeys);
  const client = opts.client ?? createServiceClient({ baseUrl: config.service.baseUrl, webhookUrl: config.service.webhookUrl, timeoutMs: config.service.timeoutMs, logger });
  const repo = new OutboxRepository(db, config.dbProvider, { maxSends: config.worker.maxSendsPerMessage });
  const pacer = new Pacer(db, config.dbProvider, { now: () => now().getTime(), onEvent: (event) => metrics.pacerEvents.inc({ event }) });

  const shopify = createShopify(config, logger);
  const sessions = createSessionStore(db, { encrypt: (p, c) => secrets.encrypt(p, c), decrypt: (s, c) => secrets.decrypt(s, c), logger });
  const tokens = createOfflineTokens({ shopify, db, sessions, logger });
  const products = createProductCatalog({ db, shopify, tokens, logger, metrics });
  const webPixels = createWebPixels({ db, shopify, tokens, logger, now });
  const permissions = createPermissions({ db, tokens, grantedScopes: (s) => fetchGrantedScopes(shopify, s), logger });
  /** Shopify calls that must not hold up a request or a batch: logged when they fail. */
  const detached = (what: string, p: Promise<unknown>) => void p.catch((err: unknown) => logger.warn({ err: (err as Error).message }, `${what} failed`));

  /** Product images and links of line items, for live events and imports alike (one cache). */
  const enrich: EnrichItems = async (shop, items) => {
    const pairs = [...new Map(items.map((i) => [`${i.product_id}|${i.variant_id}`, i])).values()];
    const found = await products.enrich({ id: shop.id, domain: shop.domain, scope: shop.scope }, pairs);
    const byPair = new Map(pairs.map((p, i) => [`${p.product_id}|${p.variant_id}`, found.items[i] ?? null]));
    return (productId, variantId) => byPair.get(`${productId}|${variantId}`) ?? null;
  };
  // writers outside stage 2 (imports, admin actions, reinstalls) index their queued work as due
  const notifyQueued = (shopId: string, runAt?: Date) => pipeline.notifyQueued(shopId, runAt);
  const backfill = createBackfill({
    db, provider: config.dbProvider, logger, shopify, tokens, now,
    production: config.production, adminOrigin: config.shopify.adminOrigin,
    onEnqueued: notifyQueued, enrich, runner: opts.backfillRunner,
  });
  const shopIdOf = async (domain: string) => (await db.shop.findUnique({ where: { domain }, select: { id: true } }))?.id ?? null;
  const sideHandlers: Record<string, SideHandler> = {
    'bulk_operations/finish': async (r) => {
      const matched = await backfill.onBulkOperationFinish(r.shopDomain, r.payload);
      return { outcome: 'ignored', reason: matched ? 'bulk operation of an import; the import was told' : 'bulk operation not started by an import' };
    },
    'app/scopes_update': async (r) => {
      const result = await permissions.onScopesUpdate(r.shopDomain, r.payload);
      const shopId = await shopIdOf(r.shopDomain);
      if (shopId && result.enabled.includes('storefront_pixel')) detached('activating the storefront pixel', webPixels.ensureActive({ id: shopId, domain: r.shopDomain }));
      return { outcome: 'accepted' };
    },
    'products/update': async (r) => {
      const shopId = await shopIdOf(r.shopDomain);
      return shopId ? { outcome: 'accepted', reason: await products.onProductUpdate(shopId, r.payload) } : { outcome: 'ignored', reason: 'unknown shop' };
    },
    'products/delete': async (r) => {
      const shopId = await shopIdOf(r.shopDomain);
      if (!shopId) return { outcome: 'ignored', reason: 'unknown shop' };
      return { outcome: 'accepted', reason: (await products.onProductDelete(shopId, r.payload)) ? 'cached product removed' : 'product was not cached' };
    },
  };
  const abandonment = { graceMs: config.checkouts.graceMinutes * 60_000, maxAgeMs: config.checkouts.maxAgeDays * 86_400_000 };
  const storefront = createStorefront({ config, db, logger, metrics, now });
  const pipeline = buildPipeline({
    config, db, logger, metrics, now, repo, pacer, client, secrets, sideHandlers,
    mapContext: () => ({ abandonment }),
    enrich,
    onUninstalled: (shopId) => webPixels.markRemoved(shopId),
    pixel: storefront.stage,
    worker: opts.worker,
    processor: opts.processor,
  });
  metrics.onScrapeLag(() => pipeline.receipts.lag(now()));

  const connection = createConnectionUseCases({
    db, client, secrets, repo, pacer, logger, now, onResumed: notifyQueued,
    shopIdentity: async (domain) => {
      const session = await tokens.getOfflineSession(domain);
      return session ? ensureShopIdentity({ shopify, db, logger }, session) : null;
    },
    onConnected: (shop) => detached('activating the storefront pixel', webPixels.ensureActive(shop)),
    onDisconnected: (shop) => detached('removing the storefront pixel', webPixels.remove(shop)),
  });
  const activity = createActivity({ db, provider: config.dbProvider, repo, receipts: pipeline.receipts, now, onEnqueued: notifyQueued });
  const holds = createHolds({ db, repo, logger, now, onRequeued: notifyQueued });
  const settings = createSettingsUseCases(db);

  const auth = sessionTokenMiddleware({ shopify, db, tokens, logger, onResumed: notifyQueued });
  let shuttingDown = false;
  const app = createApp({
    db, logger, metrics,
    isShuttingDown: () => shuttingDown,
    // a worker-only process serves the operations routes (health, readiness, metrics) alone
    rawRouters: config.webEnabled
      ? [
          // the storefront's batches outnumber the webhooks by orders of magnitude: their route first
          pixelRoute({ intake: pipeline.intake, keys: storefront.keys, logger, metrics, now, ratePerShop: config.pixel.ratePerShop, ratePerClient: config.pixel.ratePerClient }),
          webhooksRoute({ apiSecret: config.shopify.apiSecret, intake: pipeline.intake, logger, metrics, now }),
        ]
      : [],
    routers: config.webEnabled
      ? [
          authRoutes({ shopify, db, tokens, logger, onResumed: notifyQueued }),
          adminRoutes({ auth, connection, activity, settings }),
          permissionsRoutes({ auth, permissions, webPixels }),
          backfill.router(auth),
          ...(opts.routers ?? []),
          // dev session tokens only where npm run dev (or a test) asks for them, never by default
          uiRoutes({ config, ...(config.sandbox ? opts.ui : {}) }),
        ]
      : [],
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = createHttpServer(app);
    s.listen(config.port, opts.host ?? '0.0.0.0', () => resolve(s));
    s.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;

  let keyCheck: NodeJS.Timeout | undefined;
  let holdsCheck: NodeJS.Timeout | undefined;
  if (config.workerEnabled) {
    // the operator may have fixed the service address before this start
    await holds.releaseAll();
    await pipeline.startWorkers();
    backfill.runner.start();
    storefront.sweeper.start();
    // the periodic key check: at most hourly per shop, a few shops per tick
    keyCheck = setInterval(() => {
      connection.checkKeys().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'periodic key check failed'));
    }, 60_000);
    keyCheck.unref();
    // shops held because the service address answered 404: one message each tries it again
    holdsCheck = setInterval(() => {
      holds.reprobe().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'the re-probe of held deliveries failed'));
    }, 60_000);
    holdsCheck.unref();
  }
  logger.info({ port, database: config.dbProvider, sandbox: config.sandbox, role: config.role }, 'connector listening');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      shuttingDown = true;
      clearInterval(keyCheck);
      clearInterval(holdsCheck);
      const httpClosed = new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      storefront.sweeper.stop();
      await Promise.all([httpClosed, pipeline.stop(), backfill.runner.stop()]);
      await client.close();
      await db.$disconnect();
      logger.info('connector stopped');
    })());

  return {
    url, port, db, logger, server, backfill, close, role: config.role,
    worker: pipeline.worker, processor: pipeline.processor, intake: pipeline.intake, receipts: pipeline.receipts,
    notifyQueued: pipeline.notifyQueued,
    checkKeys: () => connection.checkKeys(),
    reprobeHolds: () => holds.reprobe(),
    sweepPixels: () => storefront.sweeper.sweep(),
  };
}
