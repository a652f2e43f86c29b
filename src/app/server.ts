// The composition root: builds every concrete dependency from a Config and starts what the
// process's role runs: web (stage 1 intake, admin API, page), worker (stage 2 processing,
// delivery, imports, key checks) or all. main.ts and dev.ts call this; so do process tests.
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Server } from 'node:http';
import type { Router } from 'express';
import { createBackfill, type BackfillModule, type BackfillRunnerDeps } from './backfill';
import type { Config } from '../config';
import { createSecretBox } from '../crypto/secret-box';
import { createDb, type Db } from '../db/client';
import { applyMigrations } from '../db/migrate';
import type { SideHandler } from '../processing/plan';
import { bulkOperationFinish } from '../processing/side/bulk-operation-finish';
import { scopesUpdate } from '../processing/side/scopes-update';
import type { SideEffectTopic } from '../processing/topics';
import type { ReceiptStore } from '../intake/receipt-store';
import type { Intake } from '../intake/intake';
import { adminRoutes } from '../http/admin.routes';
import { createApp, createHttpServer, createOpsApp } from '../http/app';
import { authRoutes } from '../http/auth.routes';
import { permissionsRoutes } from '../http/permissions.routes';
import { sessionTokenMiddleware } from '../http/session-token';
import { uiRoutes, type UiRoutesDeps } from '../http/ui.routes';
import { webhooksRoute } from '../http/webhooks.route';
import { createLogger, type Logger } from '../observability/logger';
import { LogOnce, LoopFailures } from '../observability/log-once';
import { Metrics } from '../observability/metrics';
import { createHolds } from '../outbox/holds';
import { Pacer } from '../outbox/pacer';
import { OutboxRepository } from '../outbox/repository';
import type { WorkerTuning } from '../outbox/delivery/tuning';
import type { DeliveryWorker } from '../outbox/delivery/worker';
import type { ReceiptProcessor } from '../processing/processor';
import { buildPipeline, type ProcessorTimings } from './pipeline';
import { createServiceClient } from '../integrations/service/client';
import type { ServiceClient } from '../integrations/service/types';
import { fetchGrantedScopes } from '../integrations/shopify/access-scopes';
import { createShopify } from '../integrations/shopify/api';
import { ensureShopIdentity } from '../integrations/shopify/install';
import { createCustomerLookup } from '../integrations/shopify/customer-lookup';
import { createProductCatalog } from '../integrations/shopify/products';
import { createSessionStore } from '../integrations/shopify/session-storage';
import { createOfflineTokens } from '../integrations/shopify/tokens';
import { createWebPixels } from '../integrations/shopify/web-pixel';
import { pixelRoute } from '../http/pixel.route';
import { proxyRoute } from '../http/proxy.route';
import { createNotifyMeModule } from './notify-me';
import { createProductAlerts } from './product-alerts';
import { createStorefront } from './storefront';
import type { SweepResult } from '../processing/storefront/sweeper';
import { createProductRetries } from '../processing/storefront/retries';
import { createActivity, DELIVERY_STATUSES } from '../admin/activity';
import { createBudget, readClassQueues } from '../admin/budget';
import { createProductAlertsView } from '../admin/product-alerts';
import { createConnectionUseCases } from '../admin/connection';
import { createPermissions } from '../admin/permissions';
import type { EnrichItems } from '../processing/forward/forward-receipts';
import { createSettingsUseCases } from '../admin/settings';
import { createStoredKeys, type KeyScan } from '../admin/stored-keys';
import { Backoff, LOOP_BACKOFF } from '../lib/backoff';

export interface RunningServer {
  url: string;
  role: Config['role'];
  port: number;
  /** The operations listener (OPS_PORT), when configured: /healthz, /readyz and /metrics are served there, not on `url`. */
  opsUrl?: string;
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
  checkKeys(): Promise<{ checked: number; invalid: number; failed: number }>;
  /** The start-up read of every stored secret, run on demand. */
  scanKeys(): Promise<KeyScan>;
  /** The re-probe of shops held because the service address answered 404, run on demand (the app runs it every minute). */
  reprobeHolds(): Promise<{ held: number; probed: number; released: number }>;
  /** The storefront's expiry sweep, run on demand (the worker runs it every 5 minutes). */
  sweepStorefront(): Promise<SweepResult>;
  /**
   * Stores a retry receipt for each shop whose storefront events are due for another product
   * lookup, run on demand (the worker runs it every 15 s); returns how many. Stage 2 then takes them.
   */
  retryStorefrontProducts(): Promise<number>;
  /** The expiry sweep of back-in-stock subscriptions, run on demand (the worker runs it every 10 minutes); returns how many it deleted. */
  sweepStockSubscriptions(): Promise<number>;
  /** The product-alert runner's pass (restocks and price drops due), run on demand; returns the signals it took. */
  runProductAlerts(): Promise<number>;
  /** Graceful: stop accepting, finish in-flight requests and deliveries, close the database. */
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  /** Host every listener binds; by default all interfaces for the public port, and OPS_HOST for the operations port. */
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
  worker?: Partial<
    Pick<WorkerTuning, 'safetyPollMs' | 'sweepEveryMs' | 'reconcileEveryMs' | 'laneQuantumMs' | 'leaseMs' | 'lanes' | 'recordRetryMs'>
  >;
  /** Stage-2 timings for tests. */
  processor?: ProcessorTimings;
  /** Timings of the historical-import runner, for tests. */
  backfillRunner?: Partial<BackfillRunnerDeps>;
  /** The product-alert runner's safety poll (ms), for tests. */
  productAlertsPollMs?: number;
}

export async function startServer(config: Config, opts: StartOptions = {}): Promise<RunningServer> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const now = opts.now ?? (() => new Date());
  for (const d of config.deprecated)
    logger.warn(
      { variable: d.variable, replacedBy: d.replacedBy },
      `${d.variable} is deprecated and still applies; it is now ${d.replacedBy}`,
    );
  const applied = await applyMigrations(config.databaseUrl);
  if (applied.length) logger.info({ applied }, 'database migrations applied');
  const db = await createDb(config.databaseUrl, {
    poolSize: config.databasePoolSize,
    keepConnections: true,
    onWarning: (message) => logger.warn(message),
  });
  // gauges read from the database are cached (GAUGE_MAX_AGE_MS): scrapes add no load of their own
  const metrics = new Metrics({
    defaultMetrics: true,
    now: () => now().getTime(),
    onGaugeError: (err) => logger.warn({ err: (err as Error).message }, 'reading a metrics gauge failed; the last value is served'),
  });
  metrics.onScrape(async () => {
    const rows = await db.outboxMessage.groupBy({ by: ['status'], _count: { _all: true } });
    const byStatus: Record<string, number> = Object.fromEntries(DELIVERY_STATUSES.map((s) => [s, 0]));
    for (const r of rows) byStatus[r.status] = r._count._all;
    return byStatus;
  });
  metrics.onScrapeClasses(() => readClassQueues(db, config.dbProvider, now()));

  const secrets = createSecretBox(config.encryption.key, config.encryption.previousKeys);
  const client =
    opts.client ??
    createServiceClient({
      baseUrl: config.service.baseUrl,
      webhookUrl: config.service.webhookUrl,
      timeoutMs: config.service.timeoutMs,
      logger,
    });
  const repo = new OutboxRepository(db, config.dbProvider, { maxSends: config.worker.maxSendsPerMessage });
  const pacer = new Pacer(db, config.dbProvider, {
    now: () => now().getTime(),
    guardMs: config.service.rateGuardMs,
    onEvent: (event) => metrics.pacerEvents.inc({ event }),
  });

  const shopify = createShopify(config, logger);
  const sessions = createSessionStore(db, { encrypt: (p, c) => secrets.encrypt(p, c), decrypt: (s, c) => secrets.decrypt(s, c), logger });
  const tokens = createOfflineTokens({ shopify, db, sessions, logger });
  const products = createProductCatalog({
    db,
    shopify,
    tokens,
    logger,
    metrics,
    now,
    storefrontLookupsPerMinute: config.pixel.lookupsPerMinute,
  });
  const webPixels = createWebPixels({ db, shopify, tokens, logger, now });
  const permissions = createPermissions({ db, tokens, grantedScopes: (s) => fetchGrantedScopes(shopify, s), logger });
  /** Shopify calls that must not hold up a request or a batch: logged when they fail. */
  const detached = (what: string, p: Promise<unknown>) =>
    void p.catch((err: unknown) => logger.warn({ err: (err as Error).message }, `${what} failed`));

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
    db,
    provider: config.dbProvider,
    logger,
    metrics,
    shopify,
    tokens,
    now,
    production: config.production,
    adminOrigin: config.shopify.adminOrigin,
    onEnqueued: notifyQueued,
    enrich,
    runner: opts.backfillRunner,
  });
  const notifyMe = createNotifyMeModule({ config, db, shopify, tokens, logger, metrics, now });
  const productAlerts = createProductAlerts({
    db,
    provider: config.dbProvider,
    logger,
    metrics,
    now,
    products,
    variants: notifyMe.variants,
    onQueued: notifyQueued,
    pollMs: opts.productAlertsPollMs,
  });
  const sideHandlers: Record<SideEffectTopic, SideHandler> = {
    'bulk_operations/finish': bulkOperationFinish(backfill),
    'app/scopes_update': scopesUpdate({
      db,
      onScopesUpdate: (domain, payload) => permissions.onScopesUpdate(domain, payload),
      activatePixel: (shop) => detached('activating the storefront pixel', webPixels.ensureActive(shop)),
    }),
    ...productAlerts.sideHandlers,
  };
  const abandonment = { graceMs: config.checkouts.graceMinutes * 60_000, maxAgeMs: config.checkouts.maxAgeDays * 86_400_000 };
  const customers = createCustomerLookup({ shopify, tokens, logger, perMinute: config.pixel.lookupsPerMinute });
  const storefront = createStorefront({ config, db, logger, metrics, now, products, customers });
  metrics.onScrapeClaims(() => storefront.pendingIdentities());
  metrics.onScrapeWaitingForProducts(() => storefront.waitingForProducts());
  const pipeline = buildPipeline({
    config,
    db,
    logger,
    metrics,
    now,
    repo,
    pacer,
    client,
    secrets,
    sideHandlers,
    mapContext: () => ({ abandonment }),
    enrich,
    onUninstalled: (shopId) => webPixels.markRemoved(shopId),
    storefront: storefront.stage,
    worker: opts.worker,
    processor: opts.processor,
  });
  metrics.onScrapeLag(() => pipeline.receipts.lag(now()));
  const productRetries = createProductRetries({
    db,
    receipts: pipeline.receipts,
    wake: () => pipeline.wakeups.publish('receipts'),
    logger,
    metrics,
    now,
  });

  const connection = createConnectionUseCases({
    db,
    client,
    secrets,
    repo,
    pacer,
    logger,
    metrics,
    now,
    onResumed: notifyQueued,
    shopIdentity: async (domain) => {
      const session = await tokens.getOfflineSession(domain);
      return session ? ensureShopIdentity({ shopify, db, logger }, session) : null;
    },
    onConnected: (shop) => detached('activating the storefront pixel', webPixels.ensureActive(shop)),
    onDisconnected: (shop) => detached('removing the storefront pixel', webPixels.remove(shop)),
  });
  const activity = createActivity({ db, provider: config.dbProvider, repo, receipts: pipeline.receipts, now, onEnqueued: notifyQueued });
  const holds = createHolds({ db, repo, logger, now, onRequeued: notifyQueued });
  const settings = createSettingsUseCases(db, config.settingsDefaults);
  const budget = createBudget({ db, now });
  const productAlertsView = createProductAlertsView({ db, provider: config.dbProvider, apiKey: config.shopify.apiKey, now });

  const auth = sessionTokenMiddleware({ shopify, db, tokens, logger, onResumed: notifyQueued });
  let shuttingDown = false;
  const opsDeps = { db, metrics, isShuttingDown: () => shuttingDown, metricsToken: config.ops.metricsToken };
  const app = createApp({
    ...opsDeps,
    logger,
    // with a listener of their own, the public port keeps /healthz alone of the operations routes
    ops: config.ops.port === undefined ? 'all' : 'health',
    // a worker-only process serves the operations routes (health, readiness, metrics) alone
    rawRouters: config.webEnabled
      ? [
          // the storefront's batches outnumber the webhooks by orders of magnitude: their route first
          pixelRoute({
            intake: pipeline.intake,
            keys: storefront.keys,
            logger,
            metrics,
            now,
            // a test's clock paces the limits too; otherwise they keep their monotonic one
            nowMs: opts.now ? () => now().getTime() : undefined,
            ratePerShop: config.pixel.ratePerShop,
            ratePerClient: config.pixel.ratePerClient,
            ratePerIp: config.pixel.ratePerIp,
            trustProxyHops: config.pixel.trustProxyHops,
          }),
          webhooksRoute({ apiSecret: config.shopify.apiSecret, intake: pipeline.intake, logger, metrics, now }),
        ]
      : [],
    routers: config.webEnabled
      ? [
          authRoutes({ shopify, db, tokens, logger, onResumed: notifyQueued }),
          adminRoutes({ auth, connection, activity, settings, budget, productAlerts: productAlertsView }),
          permissionsRoutes({ auth, permissions, webPixels, storefrontActivity: (shopId) => storefront.activity(shopId) }),
          backfill.router(auth),
          proxyRoute({
            apiSecret: config.shopify.apiSecret,
            notifyMe: notifyMe.useCase,
            logger,
            metrics,
            now,
            trustProxyHops: config.pixel.trustProxyHops,
          }),
          ...(opts.routers ?? []),
          // dev session tokens only where npm run dev (or a test) asks for them, never by default
          uiRoutes({ config, ...(config.sandbox ? opts.ui : {}) }),
        ]
      : [],
  });
  const listen = (handler: Parameters<typeof createHttpServer>[0], port: number, host: string) =>
    new Promise<Server>((resolve, reject) => {
      const s = createHttpServer(handler, config.http);
      s.listen(port, host, () => resolve(s));
      s.once('error', reject);
    });
  const server = await listen(app, config.port, opts.host ?? '0.0.0.0');
  const opsServer =
    config.ops.port === undefined ? null : await listen(createOpsApp(opsDeps), config.ops.port, opts.host ?? config.ops.host);
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  const opsUrl = opsServer ? `http://127.0.0.1:${(opsServer.address() as AddressInfo).port}` : undefined;

  let keyCheck: NodeJS.Timeout | undefined;
  let holdsCheck: NodeJS.Timeout | undefined;
  // the background loops' failures: counted, and logged once a minute while they repeat
  const failures = new LoopFailures(new LogOnce(logger, 60_000), metrics.loopFailures);
  if (config.workerEnabled) {
    // the operator may have fixed the service address before this start
    await holds.releaseAll();
    await pipeline.startWorkers();
    backfill.runner.start();
    storefront.sweeper.start();
    productRetries.start();
    notifyMe.sweeper.start();
    productAlerts.runner.start();
    // the periodic key check: at most hourly per shop, a few shops per tick
    keyCheck = setInterval(() => {
      connection.checkKeys().catch((err: unknown) => failures.report('key_check', err, 'periodic key check failed', { level: 'warn' }));
    }, 60_000);
    keyCheck.unref();
    // shops held because the service address answered 404: one message each tries it again
    holdsCheck = setInterval(() => {
      holds
        .reprobe()
        .catch((err: unknown) => failures.report('holds_reprobe', err, 'the re-probe of held deliveries failed', { level: 'warn' }));
    }, 60_000);
    holdsCheck.unref();
  }
  logger.info(
    {
      port,
      ...(opsServer ? { opsPort: (opsServer.address() as AddressInfo).port } : {}),
      database: config.dbProvider,
      sandbox: config.sandbox,
      role: config.role,
    },
    'connector listening',
  );

  // every stored secret read once against the configured keys, in the background: unreadable
  // ones named in one line, held deliveries of keys that read again resumed, a rotation finished
  const storedKeys = createStoredKeys({ db, secrets, repo, logger, metrics, now, onResumed: notifyQueued });
  const stopScan = new AbortController();
  const keyScan = (async () => {
    const backoff = new Backoff<string>(LOOP_BACKOFF);
    while (!stopScan.signal.aborted) {
      try {
        await storedKeys.scan();
        return;
      } catch (err) {
        const wait = backoff.fail('scan');
        failures.report('key_rotation', err, 'reading the stored secrets failed; trying again after a wait', {
          retryInMs: wait,
          level: 'warn',
        });
        await sleep(wait, undefined, { signal: stopScan.signal }).catch(() => undefined);
      }
    }
  })();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      shuttingDown = true;
      clearInterval(keyCheck);
      clearInterval(holdsCheck);
      const httpClosed = Promise.all(
        [server, opsServer].map(
          (s) =>
            s &&
            new Promise<void>((resolve) => {
              s.close(() => resolve());
              s.closeIdleConnections();
            }),
        ),
      );
      storefront.sweeper.stop();
      productRetries.stop();
      notifyMe.sweeper.stop();
      await productAlerts.runner.stop();
      stopScan.abort();
      await Promise.all([httpClosed, pipeline.stop(), backfill.runner.stop(), keyScan]);
      await client.close();
      await db.$disconnect();
      logger.info('connector stopped');
    })());

  return {
    url,
    port,
    opsUrl,
    db,
    logger,
    server,
    backfill,
    close,
    role: config.role,
    worker: pipeline.worker,
    processor: pipeline.processor,
    intake: pipeline.intake,
    receipts: pipeline.receipts,
    notifyQueued: pipeline.notifyQueued,
    checkKeys: () => connection.checkKeys(),
    scanKeys: () => storedKeys.scan(),
    reprobeHolds: () => holds.reprobe(),
    sweepStorefront: () => storefront.sweeper.sweep(),
    retryStorefrontProducts: () => productRetries.run(),
    sweepStockSubscriptions: () => notifyMe.sweeper.sweep(),
    runProductAlerts: () => productAlerts.runner.runDue(),
  };
}
