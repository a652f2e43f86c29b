// Recording an install: the Shop row (created, or revived after an uninstall) with the id and
// name Shopify reports. Used by token exchange (embedded) and the authorization-code grant.
import type { Session } from '@shopify/shopify-api';
import type { Db } from '../../db/client';
import type { Logger } from '../../observability/logger';
import type { ShopifyApi } from './api';
import { describeShopifyError } from './errors';
import { fetchShopIdentity, type ShopIdentity } from './shop-query';

export interface InstalledShop {
  id: string;
  domain: string;
}

export interface InstallDeps {
  shopify: ShopifyApi;
  db: Db;
  logger: Logger;
  /** A reinstall queued again what the uninstall held: index it as due and wake the workers. */
  onResumed?: (shopId: string) => void;
}

/**
 * Creates or revives the shop's row for a freshly stored offline session: tokenStatus 'active',
 * uninstalledAt cleared, shop id and name fetched. A failing shop query is logged and leaves id
 * and name as they were (ensureShopIdentity retries later); the install itself stands.
 */
export async function recordInstall(deps: InstallDeps, session: Session): Promise<InstalledShop> {
  const domain = session.shop;
  const identity = await tryIdentity(deps, session);
  const known = identity ? { shopifyId: identity.shopId, name: identity.shopName } : {};
  const existing = await deps.db.shop.findUnique({ where: { domain } });
  const revive = {
    ...known,
    tokenStatus: 'active',
    tokenError: null,
    uninstalledAt: null,
    ...(existing?.uninstalledAt ? { installedAt: new Date() } : {}),
  };
  if (existing) {
    await deps.db.shop.update({ where: { domain }, data: revive });
    if (existing.uninstalledAt) {
      // reinstalled before shop/redact: what the uninstall held can go out again
      const resumed = await deps.db.outboxMessage.updateMany({
        where: { shopId: existing.id, status: 'held', heldReason: 'uninstalled' },
        data: { status: 'queued', heldReason: null, runAt: new Date() },
      });
      deps.logger.info({ shop: domain, resumed: resumed.count }, 'shop reinstalled');
      if (resumed.count) deps.onResumed?.(existing.id);
    }
    return { id: existing.id, domain };
  }
  try {
    const created = await deps.db.shop.create({ data: { domain, ...known, tokenStatus: 'active' } });
    deps.logger.info({ shop: domain }, 'shop installed');
    return { id: created.id, domain };
  } catch (err) {
    // Two first requests raced; the other one created the row.
    if ((err as { code?: unknown })?.code !== 'P2002') throw err;
    const row = await deps.db.shop.update({ where: { domain }, data: revive });
    return { id: row.id, domain };
  }
}

/** Fills in the shop id and name when an earlier shop query failed. Never throws. */
export async function ensureShopIdentity(deps: InstallDeps, session: Session): Promise<ShopIdentity | null> {
  const identity = await tryIdentity(deps, session);
  if (identity) {
    await deps.db.shop.updateMany({ where: { domain: session.shop }, data: { shopifyId: identity.shopId, name: identity.shopName } });
  }
  return identity;
}

async function tryIdentity(deps: InstallDeps, session: Session): Promise<ShopIdentity | null> {
  try {
    return await fetchShopIdentity(deps.shopify, session);
  } catch (err) {
    deps.logger.warn({ shop: session.shop, failure: describeShopifyError(err) }, 'could not read the shop id and name from Shopify');
    return null;
  }
}
