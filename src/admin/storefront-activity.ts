// The storefront's trust checks of the last day, for the admin page's storefront card: pending
// identities now (emails given that Shopify has not vouched for; the page's fields keep the name
// claims_*), events waiting now for Shopify to describe their products, and per-hour counts
// (PixelStat) of the last 24 hours: identities vouched, pending identities expired unvouched, products
// dropped as unknown, events dropped after waiting their whole window for product data, events
// over a per-email limit.
import type { Db } from '../db/client';

export interface StorefrontActivity {
  window_hours: number;
  claims_pending: number;
  claims_vouched: number;
  claims_expired: number;
  products_dropped: number;
  products_waiting: number;
  products_expired: number;
  events_limited: number;
}

const HOUR_MS = 3_600_000;
export const ACTIVITY_HOURS = 24;

export async function storefrontActivity(db: Db, shopId: string, now: Date): Promise<StorefrontActivity> {
  const hour = Math.floor(now.getTime() / HOUR_MS);
  const [pending, waiting, sums] = await Promise.all([
    db.pixelClaim.count({ where: { shopId, expiresAt: { gt: now } } }),
    db.pixelEvent.count({ where: { shopId, describeAt: { not: null }, expiresAt: { gt: now } } }),
    db.pixelStat.aggregate({
      where: { shopId, hour: { gt: hour - ACTIVITY_HOURS } },
      _sum: { vouched: true, expired: true, dropped: true, limited: true, unavailable: true },
    }),
  ]);
  return {
    window_hours: ACTIVITY_HOURS,
    claims_pending: pending,
    claims_vouched: sums._sum.vouched ?? 0,
    claims_expired: sums._sum.expired ?? 0,
    products_dropped: sums._sum.dropped ?? 0,
    products_waiting: waiting,
    products_expired: sums._sum.unavailable ?? 0,
    events_limited: sums._sum.limited ?? 0,
  };
}
