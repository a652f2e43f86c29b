// The historical import, assembled: the Shopify bulk source, the runner, the use cases and the
// /api/backfill router. server.ts calls createBackfill once; tests build it the same way.
import type { RequestHandler, Router } from 'express';
import type { Db, DbProvider } from '../db/client';
import { backfillRoutes } from '../http/backfill.routes';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import type { ShopifyApi } from '../integrations/shopify/api';
import type { OfflineTokens } from '../integrations/shopify/tokens';
import { createBackfillUseCases, type BackfillUseCases } from '../admin/backfill';
import type { BackfillRunnerDeps } from '../backfill/deps';
import { BackfillRunner } from '../backfill/runner';
import { createShopifyBulkSource, type BulkSource } from '../backfill/shopify-bulk';

export { BackfillRunner } from '../backfill/runner';
export type { BackfillRunnerDeps } from '../backfill/deps';
export { createShopifyBulkSource, BulkSourceError, type BulkSource, type BulkOperation } from '../backfill/shopify-bulk';
export { KINDS, type Kind } from '../backfill/progress';

export interface BackfillModuleDeps {
  db: Db;
  /** config.dbProvider */
  provider: DbProvider;
  logger: Logger;
  metrics?: Metrics;
  shopify: ShopifyApi;
  tokens: OfflineTokens;
  /** config.production: result URLs must then be https. */
  production: boolean;
  /** config.shopify.adminOrigin (SHOPIFY_ADMIN_ORIGIN), for development and tests. */
  adminOrigin?: string;
  now?: () => Date;
  /** The worker's nudge. */
  onEnqueued?: (shopId: string) => void;
  /** Tuning (poll intervals, lease, batch size, queue window). */
  runner?: Omit<Partial<BackfillRunnerDeps>, 'db' | 'provider' | 'source' | 'logger' | 'metrics' | 'now' | 'onEnqueued'>;
  /** Replaces Shopify (tests of odd Shopify behaviour). */
  source?: BulkSource;
  /** Product images and links for imported orders (the live events' cache). */
  enrich?: BackfillRunnerDeps['enrich'];
}

export interface BackfillModule {
  runner: BackfillRunner;
  useCases: BackfillUseCases;
  /** POST/GET/DELETE /api/backfill behind `auth` (skipped when it already ran for the request). */
  router(auth: RequestHandler): Router;
  /** For the intake: the bulk_operations/finish webhook. True when it belongs to an import. */
  onBulkOperationFinish(shopDomain: string, payload: unknown): Promise<boolean>;
}

export function createBackfill(deps: BackfillModuleDeps): BackfillModule {
  const source =
    deps.source ??
    createShopifyBulkSource({
      shopify: deps.shopify,
      tokens: deps.tokens,
      logger: deps.logger,
      adminOrigin: deps.adminOrigin,
      production: deps.production,
    });
  const runner = new BackfillRunner({
    ...deps.runner,
    db: deps.db,
    provider: deps.provider,
    source,
    logger: deps.logger,
    metrics: deps.metrics,
    now: deps.now,
    onEnqueued: deps.onEnqueued,
    enrich: deps.enrich,
  });
  const useCases = createBackfillUseCases({ db: deps.db, now: deps.now, wake: () => runner.wake() });
  return {
    runner,
    useCases,
    router: (auth) => backfillRoutes({ auth, backfill: useCases, now: deps.now }),
    onBulkOperationFinish: (shop, payload) => runner.onBulkOperationFinish(shop, payload),
  };
}
