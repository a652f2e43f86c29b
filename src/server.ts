// The composition root: builds every concrete dependency from a Config and starts HTTP (and,
// in later layers, the delivery worker). main.ts and dev.ts call this; so do process-level tests.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Config } from './config';
import { createDb, type Db } from './db/client';
import { applyMigrations } from './db/migrate';
import { createApp } from './http/app';
import { createLogger, type Logger } from './observability/logger';
import { Metrics } from './observability/metrics';

export interface RunningServer {
  url: string;
  port: number;
  db: Db;
  logger: Logger;
  server: Server;
  /** Graceful: stop accepting, finish in-flight requests and deliveries, close the database. */
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  /** Host to bind; defaults to all interfaces. */
  host?: string;
}

export async function startServer(config: Config, opts: StartOptions = {}): Promise<RunningServer> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const applied = await applyMigrations(config.databaseUrl);
  if (applied.length) logger.info({ applied }, 'database migrations applied');
  const db = await createDb(config.databaseUrl);
  const metrics = new Metrics({ defaultMetrics: true });
  metrics.onScrape(async (set) => {
    const rows = await db.outboxMessage.groupBy({ by: ['status'], _count: { _all: true } });
    for (const s of ['queued', 'delivering', 'delivered', 'held', 'dead', 'cancelled']) set(s, 0);
    for (const r of rows) set(r.status, r._count._all);
  });

  let shuttingDown = false;
  const app = createApp({ db, logger, metrics, isShuttingDown: () => shuttingDown });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.port, opts.host ?? '0.0.0.0', () => resolve(s));
    s.once('error', reject);
  });
  // Shopify gives a webhook 5 s; keep sockets from lingering behind load balancers.
  server.keepAliveTimeout = 65_000;
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  logger.info({ port, database: config.dbProvider, sandbox: config.sandbox }, 'connector listening');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      shuttingDown = true;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await db.$disconnect();
      logger.info('connector stopped');
    })());

  return { url, port, db, logger, server, close };
}
