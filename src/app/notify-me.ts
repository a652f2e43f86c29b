// The storefront's notify-me form, assembled from the config: the use case behind
// POST /proxy/back-in-stock (src/http/proxy.route.ts) with its Shopify lookups, and the expiry
// sweep of the subscriptions.
import type { Config } from '../config';
import type { Db } from '../db/client';
import type { ShopifyApi } from '../integrations/shopify/api';
import { createCustomerEmailLookup } from '../integrations/shopify/customer-email';
import type { OfflineTokens } from '../integrations/shopify/tokens';
import { createVariantLookup, type VariantLookup } from '../integrations/shopify/variant-lookup';
import { TokenBuckets } from '../lib/rate-limit';
import { customerEmails, profileEmail, type StoredCustomerEmail } from '../notify-me/customer-emails';
import { createSubscriptionSweeper, type SubscriptionSweeper } from '../notify-me/sweeper';
import { createNotifyMe, type NotifyMe } from '../notify-me/use-case';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';

/** Admin API calls the notify-me form may cause per shop and minute, in this process (variant and customer lookups). */
export const NOTIFY_ME_LOOKUPS_PER_MINUTE = 60;

export interface NotifyMeModule {
  useCase: NotifyMe;
  sweeper: SubscriptionSweeper;
  /** Whether Shopify sells a variant, and can now: the form's check, and a restock's (app/product-alerts.ts). */
  variants: VariantLookup;
}

export interface NotifyMeModuleDeps {
  config: Pick<Config, 'notifyMe'>;
  db: Db;
  shopify: ShopifyApi;
  tokens: Pick<OfflineTokens, 'getOfflineSession'>;
  logger: Logger;
  metrics: Metrics;
  now: () => Date;
  /** What the app keeps as a customer's email, asked before the Admin API; by default the customer profile's. */
  storedEmail?: StoredCustomerEmail;
}

export function createNotifyMeModule(deps: NotifyMeModuleDeps): NotifyMeModule {
  const { db, shopify, tokens, logger, metrics, now } = deps;
  const budget = new TokenBuckets({ rate: NOTIFY_ME_LOOKUPS_PER_MINUTE / 60, burst: NOTIFY_ME_LOOKUPS_PER_MINUTE, maxKeys: 50_000 });
  const take = (shopId: string) => budget.take(shopId);
  const n = deps.config.notifyMe;
  const variants = createVariantLookup({ shopify, tokens, logger, budget: take });
  return {
    variants,
    useCase: createNotifyMe({
      db,
      logger,
      now,
      variants,
      customers: customerEmails(createCustomerEmailLookup({ shopify, tokens, logger, budget: take }), deps.storedEmail ?? profileEmail(db)),
      keepDays: n.keepDays,
      perIpPerMinute: n.perIpPerMinute,
      perEmailPerHour: n.perEmailPerHour,
    }),
    sweeper: createSubscriptionSweeper({ db, logger, metrics, now }),
  };
}
