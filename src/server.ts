// The composition root: builds every concrete dependency from a Config and starts HTTP and the
// delivery worker. main.ts and dev.ts call this; so do process-level tests.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createBackfill, type BackfillModule, type BackfillRunnerDeps } from './backfill';
import type { Config } from './config';
import { createSecretBox } from './crypto/secret-box';
import { createDb, type Db } from './db/client';
import { applyMigrations } from './db/migrate';
import { adminRoutes } from './http/admin.routes';
import { createApp } from './http/app';
import { authRoutes } from './http/auth.routes';
import { sessionTokenMiddleware } from './http/session-token';
import { uiRoutes, type UiRoutesDeps } from './http/ui.routes';
import { webhooksRoute } from './http/webhooks.route';
import { createLogger, type Logger } from './observability/logger';
import { Metrics } from './observability/metrics';
import { Pacer } from './outbox/pacer';
import { OutboxRepository } from './outbox/repository';
import { DeliveryWorker } from './outbox/worker';
import { createServiceClient } from './service/client';
import type { ServiceClient } from './service/types';
import { createShopify } from './shopify/api';
import { ensureShopIdentity } from './shopify/install';
import { createSessionStore } from './shopify/session-storage';
import { createOfflineTokens } from './shopify/tokens';
import { createActivity } from './use-cases/activity';
import { createConnectionUseCases } from './use-cases/connection';
import { createGdpr } from './use-cases/gdpr';
import { createIngestWebhook } from './use-cases/ingest-webhook';
import { createSettingsUseCases } from './use-cases/settings';
import type { Router } from 'express';

export interface RunningServer {
  url: string;
  port: number;
  db: Db;
  logger: Logger;
  server: Server;
  worker: DeliveryWorker;
  backfill: BackfillModule;
  /** The periodic key check, run on demand (the app runs it every minute). */
  checkKeys(): Promise<{ checked: number; invalid: number }>;
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
  workerPollMs?: number;
  /** Timings of the historical-import runner, for tests. */
  backfillRunner?: Partial<BackfillRunnerDeps>;
}

export async function startServer(config: Config, opts: StartOptions = {}): Promise<RunningServer> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const now = opts.now ?? (() => new Date());
  const applied = await applyMigrations(config.databaseUrl);
  if (applied.length) logger.info({ applied }, 'database migrations applied');
  const db = await createDb(config.databaseUrl);
  const metrics = new Metrics({ defaultMetrics: true });
  metrics.onScrape(async (set) => {
    const rows = await db.outboxMessage.groupBy({ by: ['status'], _count: { _all: true } });
    for (const s of ['queued', 'delivering', 'delivered', 'held', 'dead', 'cancelled']) set(s, 0);
    for (const r of rows) set(r.status, r._count._all);
  });

  const secrets = createSecretBox(config.encryption.key, config.encryption.previousKeys);
  const client = opts.client ?? createServiceClient({ baseUrl: config.service.baseUrl, webhookUrl: config.service.webhookUrl, timeoutMs: config.service.timeoutMs, logger });
  const repo = new OutboxRepository(db, config.dbProvider);
  const pacer = new Pacer(db, config.dbProvider, { now: () => now().getTime() });
  const worker = new DeliveryWorker({
    db, repo, pacer, client, secrets, metrics, logger, now,
    requestTimeoutMs: config.service.timeoutMs,
    pollMs: opts.workerPollMs,
  });
  const nudge = (shopId: string) => worker.nudge(shopId);

  const shopify = createShopify(config, logger);
  const sessions = createSessionStore(db, { encrypt: (p, c) => secrets.encrypt(p, c), decrypt: (s, c) => secrets.decrypt(s, c), logger });
  const tokens = createOfflineTokens({ shopify, db, sessions, logger });
  const gdpr = createGdpr({ db, logger, repo, now, onEnqueued: nudge });
  const backfill = createBackfill({
    db, provider: config.dbProvider, logger, shopify, tokens, now,
    production: config.production, adminOrigin: config.shopify.adminOrigin,
    onEnqueued: nudge, runner: opts.backfillRunner,
  });
  const ingest = createIngestWebhook({ db, logger, metrics, gdpr, now, onEnqueued: nudge, onBulkOperationFinish: backfill.onBulkOperationFinish });
  const connection = createConnectionUseCases({
    db, client, secrets, repo, pacer, logger, now, onResumed: nudge,
    shopIdentity: async (domain) => {
      const session = await tokens.getOfflineSession(domain);
      return session ? ensureShopIdentity({ shopify, db, logger }, session) : null;
    },
  });
  const activity = createActivity({ db, provider: config.dbProvider, repo, now, onEnqueued: nudge });
  const settings = createSettingsUseCases(db);

  const auth = sessionTokenMiddleware({ shopify, db, tokens, logger });
  let shuttingDown = false;
  const app = createApp({
    db, logger, metrics,
    isShuttingDown: () => shuttingDown,
    rawRouters: [webhooksRoute({ apiSecret: config.shopify.apiSecret, ingest, logger, metrics })],
    routers: [
      authRoutes({ shopify, db, tokens, logger }),
      adminRoutes({ auth, connection, activity, settings }),
      backfill.router(auth),
      ...(opts.routers ?? []),
      // dev session tokens only where npm run dev (or a test) asks for them, never by default
      uiRoutes({ config, ...(config.sandbox ? opts.ui : {}) }),
    ],
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.port, opts.host ?? '0.0.0.0', () => resolve(s));
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;

  if (config.workerEnabled) {
    worker.start();
    backfill.runner.start();
  }
  // the periodic key check: at most hourly per shop, a few shops per tick
  const keyCheck = setInterval(() => {
    connection.checkKeys().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'periodic key check failed'));
  }, 60_000);
  keyCheck.unref();
  logger.info({ port, database: config.dbProvider, sandbox: config.sandbox, worker: config.workerEnabled }, 'connector listening');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      shuttingDown = true;
      clearInterval(keyCheck);
      const httpClosed = new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await Promise.all([httpClosed, worker.stop(), backfill.runner.stop()]);
      await client.close();
      await db.$disconnect();
      logger.info('connector stopped');
    })());

  return { url, port, db, logger, server, worker, backfill, close, checkKeys: () => connection.checkKeys() };
}
