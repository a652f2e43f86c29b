// The storefront's server side, assembled from the config: stage 2 (processing/storefront/stage.ts),
// stage 1's cache of pixel keys (intake/pixel-keys.ts; the route is http/pixel.route.ts), the
// expiry sweeper, and the last day's trust counts for the admin page (admin/storefront-activity.ts).
import type { Config } from '../config';
import type { Db } from '../db/client';
import type { StorefrontStage } from '../processing/plan';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import type { CustomerLookup } from '../integrations/shopify/customer-lookup';
import type { ProductCatalog } from '../integrations/shopify/products';
import { storefrontActivity, type StorefrontActivity } from '../admin/storefront-activity';
import { createEmailKeys } from '../processing/storefront/email-keys';
import { createPixelKeys, type PixelKeys } from '../intake/pixel-keys';
import { createStorefrontStage } from '../processing/storefront/stage';
import { StorefrontStore } from '../processing/storefront/store';
import { createStorefrontSweeper, type StorefrontSweeper } from '../processing/storefront/sweeper';

export interface Storefront {
  stage: StorefrontStage;
  keys: PixelKeys;
  sweeper: StorefrontSweeper;
  /** The last day's trust counts of a shop, for the admin page. */
  activity(shopId: string): Promise<StorefrontActivity>;
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
    stage: createStorefrontStage({
      store: new StorefrontStore(db),
      metrics,
      logger,
      now,
      keys: createEmailKeys(config.encryption),
      products: deps.products,
      customers: deps.customers,
      anonymousMs: p.anonymousHours * 3_600_000,
      identityMs: p.identityDays * 86_400_000,
      pendingIdentityMs: p.claimMinutes * 60_000,
      settingsDefaults: config.settingsDefaults,
    }),
    keys: createPixelKeys(db, logger),
    sweeper: createStorefrontSweeper({ db, logger, metrics, now }),
    activity: (shopId) => storefrontActivity(db, shopId, now()),
    pendingIdentities: () => db.pixelClaim.count({ where: { expiresAt: { gt: now() } } }),
    waitingForProducts: () => db.pixelEvent.count({ where: { describeAt: { not: null }, expiresAt: { gt: now() } } }),
  };
}
