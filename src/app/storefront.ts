// The storefront pixel's server side, assembled from the config: stage 2 (stage.ts), the key
// cache of stage 1 (keys.ts; the route is src/http/pixel.route.ts), the expiry sweeper, and the
// last day's trust counts for the admin page (activity.ts).
import type { Config } from '../config';
import type { Db } from '../db/client';
import type { PixelStage } from '../processing/plan';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import type { CustomerLookup } from '../integrations/shopify/customer-lookup';
import type { ProductCatalog } from '../integrations/shopify/products';
import { pixelActivity, type PixelActivity } from '../admin/storefront-activity';
import { createEmailKeys } from '../processing/storefront/email-keys';
import { createPixelKeys, type PixelKeys } from '../intake/pixel-keys';
import { createPixelStage } from '../processing/storefront/stage';
import { PixelStore } from '../processing/storefront/store';
import { createPixelSweeper, type PixelSweeper } from '../processing/storefront/sweeper';

export interface Storefront {
  stage: PixelStage;
  keys: PixelKeys;
  sweeper: PixelSweeper;
  /** The last day's trust counts of a shop, for the admin page. */
  activity(shopId: string): Promise<PixelActivity>;
  /** Pending identities now, in all shops (the metrics gauge connector_pixel_claims_pending). */
  pendingIdentities(): Promise<number>;
  /** Events waiting now for Shopify to describe their products, in all shops (the metrics gauge). */
  waitingForProducts(): Promise<number>;
}

export interface StorefrontDeps {
  config: Config;
  db: Db;
  logger: Logger;
  metrics: Metrics;
  now: () => Date;
  /** Shopify's products, for what storefront events say about them. */
  products: Pick<ProductCatalog, 'describe'>;
  /** Shopify's customers, for pending identities no webhook vouched for. */
  customers: CustomerLookup;
}

export function createStorefront(deps: StorefrontDeps): Storefront {
  const { config, db, logger, metrics, now } = deps;
  const p = config.pixel;
  return {
    stage: createPixelStage({
      store: new PixelStore(db),
      metrics,
      logger,
      now,
      keys: createEmailKeys(config.encryption),
      products: deps.products,
      customers: deps.customers,
      anonymousMs: p.anonymousHours * 3_600_000,
      identityMs: p.identityDays * 86_400_000,
      browseDelayMs: p.browseDelayMinutes * 60_000,
      cartDelayMs: p.cartDelayMinutes * 60_000,
      pendingIdentityMs: p.claimMinutes * 60_000,
      eventsPerEmailDay: p.eventsPerEmailDay,
      abandonmentsPerEmailDay: p.abandonmentsPerEmailDay,
    }),
    keys: createPixelKeys(db, logger),
    sweeper: createPixelSweeper({ db, logger, metrics, now }),
    activity: (shopId) => pixelActivity(db, shopId, now()),
    pendingIdentities: () => db.pixelClaim.count({ where: { expiresAt: { gt: now() } } }),
    waitingForProducts: () => db.pixelEvent.count({ where: { describeAt: { not: null }, expiresAt: { gt: now() } } }),
  };
}
