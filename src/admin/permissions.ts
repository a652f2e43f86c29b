// Optional scopes: which features the shop's granted scopes allow, and keeping the stored
// offline session's scope in step with Shopify (the app/scopes_update webhook, or on request
// the Admin API's currentAppInstallation). Returns plain data; knows nothing of HTTP.
import { z } from 'zod';
import type { Db } from '../db/client';
import type { Logger } from '../observability/logger';
import { describeShopifyError } from '../integrations/shopify/errors';
import { sanitizeShop } from '../integrations/shopify/sanitize';
import { FEATURE_SCOPES, FEATURES, missingScopes, parseScopes, type Feature } from '../integrations/shopify/scopes';
import type { OfflineTokens } from '../integrations/shopify/tokens';
import { UseCaseError } from './errors';

export interface FeatureView {
  feature: Feature;
  scopes: string[];
  granted: boolean;
  /** The scopes still to grant (empty when granted). */
  missing: string[];
}

export interface PermissionsView {
  granted: string[];
  features: FeatureView[];
}

export interface ScopesUpdateResult {
  /** False when the shop has no stored offline session (nothing to update). */
  updated: boolean;
  granted: string[];
  /** Features the update turned on, e.g. to activate the storefront pixel right away. */
  enabled: Feature[];
  /** Features the update turned off. */
  disabled: Feature[];
}

export interface PermissionsUseCases {
  /** `refresh`: ask Shopify for the granted scopes first and store them (after the merchant granted some). */
  get(shop: { domain: string }, opts?: { refresh?: boolean }): Promise<PermissionsView>;
  /** The app/scopes_update webhook: stores `current` as the offline session's scope. */
  onScopesUpdate(shopDomain: string, payload: unknown): Promise<ScopesUpdateResult>;
}

export interface PermissionsDeps {
  db: Db;
  tokens: Pick<OfflineTokens, 'getOfflineSession'>;
  /** The granted scopes as Shopify reports them now (src/integrations/shopify/access-scopes.ts, fetchGrantedScopes). */
  grantedScopes: (session: NonNullable<Awaited<ReturnType<OfflineTokens['getOfflineSession']>>>) => Promise<string[]>;
  logger: Logger;
}

/** app/scopes_update: `{id, previous: [...], current: [...], updated_at}` (shop_id since 2025-07). */
export const scopesUpdatePayload = z.object({
  current: z.array(z.string()),
  previous: z.array(z.string()).optional(),
  updated_at: z.string().optional(),
});

export function featuresFor(granted: readonly string[]): FeatureView[] {
  return FEATURES.map((feature) => {
    const scopes = [...FEATURE_SCOPES[feature]];
    const missing = missingScopes(granted, scopes);
    return { feature, scopes, granted: missing.length === 0, missing };
  });
}

const enabledIn = (granted: readonly string[]) =>
  new Set(
    featuresFor(granted)
      .filter((f) => f.granted)
      .map((f) => f.feature),
  );

export function createPermissions(deps: PermissionsDeps): PermissionsUseCases {
  const { db, tokens } = deps;
  const logger = deps.logger.child({ component: 'permissions' });

  /** Only the scope column: writing the whole session could put back a token a refresh just rotated. */
  async function storeScope(domain: string, scopes: string[]): Promise<boolean> {
    const { count } = await db.session.updateMany({ where: { shop: domain, isOnline: false }, data: { scope: scopes.join(',') } });
    return count > 0;
  }

  return {
    async get(shop, opts = {}) {
      const session = await tokens.getOfflineSession(shop.domain);
      let granted = parseScopes(session?.scope);
      if (opts.refresh && session) {
        try {
          const current = parseScopes(await deps.grantedScopes(session));
          if (current.join(',') !== granted.join(',')) {
            await storeScope(session.shop, current);
            logger.info({ shop: session.shop, granted: current }, 'granted scopes refreshed from Shopify');
          }
          granted = current;
        } catch (err) {
          logger.warn({ shop: shop.domain, failure: describeShopifyError(err) }, 'could not read the granted scopes from Shopify');
          throw new UseCaseError('shopify_unavailable', 'Shopify could not be asked which permissions the store granted; please retry.');
        }
      }
      return { granted, features: featuresFor(granted) };
    },

    async onScopesUpdate(shopDomain, payload) {
      const domain = sanitizeShop(shopDomain);
      const parsed = scopesUpdatePayload.safeParse(payload);
      if (!domain || !parsed.success) {
        logger.warn({ shop: shopDomain }, 'app/scopes_update without a shop or a current scope list; ignored');
        return { updated: false, granted: [], enabled: [], disabled: [] };
      }
      const granted = parseScopes(parsed.data.current);
      const stored = await db.session.findFirst({ where: { shop: domain, isOnline: false }, select: { scope: true } });
      const before = enabledIn(parseScopes(stored?.scope));
      const after = enabledIn(granted);
      // no stored session (uninstalled, or never opened): the next token carries the scopes
      const updated = stored ? await storeScope(domain, granted) : false;
      const result: ScopesUpdateResult = {
        updated,
        granted,
        enabled: updated ? FEATURES.filter((f) => after.has(f) && !before.has(f)) : [],
        disabled: updated ? FEATURES.filter((f) => before.has(f) && !after.has(f)) : [],
      };
      logger.info({ shop: domain, granted, enabled: result.enabled, disabled: result.disabled, updated }, 'granted scopes updated');
      return result;
    },
  };
}
