// app/scopes_update (a side effect of stage 2: no event of its own): the merchant granted or
// revoked optional scopes. The stored session's scopes follow (src/admin/permissions.ts), and a
// storefront pixel the grant just enabled is activated, detached: a Shopify call never holds up
// the unit.
import type { Db } from '../../db/client';
import { outcomePlan, type SideHandler } from '../plan';

export interface ScopesUpdateDeps {
  db: Db;
  /** Records the granted scopes; returns the optional features they enabled. */
  onScopesUpdate(shopDomain: string, payload: unknown): Promise<{ enabled: readonly string[] }>;
  /** Activates the shop's storefront pixel, in the background (a failure is logged). */
  activatePixel(shop: { id: string; domain: string }): void;
}

export function scopesUpdate(deps: ScopesUpdateDeps): SideHandler {
  return async (r) => {
    const result = await deps.onScopesUpdate(r.shopDomain, r.payload);
    if (result.enabled.includes('storefront_pixel')) {
      const shop = await deps.db.shop.findUnique({ where: { domain: r.shopDomain }, select: { id: true } });
      if (shop) deps.activatePixel({ id: shop.id, domain: r.shopDomain });
    }
    return outcomePlan([r], 'accepted');
  };
}
