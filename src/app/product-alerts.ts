// Back in stock and price drops, assembled: the catalog topics' side handlers that record what
// Shopify signals, and the runner that turns each signal into its messages (worker roles).
import type { Db, DbProvider } from '../db/client';
import type { ProductCatalog } from '../integrations/shopify/products';
import type { VariantLookup } from '../integrations/shopify/variant-lookup';
import { LogOnce, LoopFailures } from '../observability/log-once';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { ProductAlertRunner } from '../processing/product-alerts/runner';
import { SignalStore } from '../processing/product-alerts/signals';
import { productSideHandlers } from '../processing/side/products';

export interface ProductAlertsDeps {
  db: Db;
  provider: DbProvider;
  logger: Logger;
  metrics: Metrics;
  now: () => Date;
  products: ProductCatalog;
  variants: VariantLookup;
  /** Messages were queued for the shop: index them as due and wake the delivery workers. */
  onQueued: (shopId: string) => void;
  /** The runner's safety poll, for tests. */
  pollMs?: number;
}

export function createProductAlerts(deps: ProductAlertsDeps) {
  const signals = new SignalStore(deps.db, deps.provider);
  const runner = new ProductAlertRunner({
    db: deps.db,
    provider: deps.provider,
    logger: deps.logger,
    metrics: deps.metrics,
    now: deps.now,
    signals,
    products: deps.products,
    variants: deps.variants,
    failures: new LoopFailures(new LogOnce(deps.logger, 60_000), deps.metrics.loopFailures),
    onQueued: deps.onQueued,
    pollMs: deps.pollMs,
  });
  return {
    runner,
    sideHandlers: productSideHandlers({ db: deps.db, products: deps.products, signals, onSignals: () => runner.nudge() }),
  };
}
