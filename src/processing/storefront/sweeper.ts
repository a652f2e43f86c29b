// Waiting storefront state expires: events past their window (anonymous ones never identified, and
// ones Shopify never described the product of: never sent; the latter counted per shop and hour for
// the admin page, and logged once per shop and hour), identities not seen for PIXEL_IDENTITY_DAYS,
// pending identities whose email Shopify never vouched for (counted per shop and hour for the admin page),
// vouched and unknown emails past their time, and the hourly counts once older than two days. DELETEs on each table's expiresAt index,
// every few minutes: what waits costs no CPU, whatever the number of visitors. A day of anonymous
// traffic is millions of rows, so each DELETE takes the oldest `chunk` or so, and the event loop
// turns between them (on SQLite a statement holds it until done).
import { Prisma } from '@prisma/client';
import type { Db } from '../../db/client';
import { deleteExpired, expiringTable, type ExpiringTable } from '../../db/expiry';
import { periodicTask } from '../../lib/periodic-task';
import { LogOnce, LoopFailures } from '../../observability/log-once';
import type { Logger } from '../../observability/logger';
import type { Metrics } from '../../observability/metrics';

export interface StorefrontSweeperDeps {
  db: Db;
  logger: Logger;
  metrics: Metrics;
  now: () => Date;
  everyMs?: number;
  /** Rows per DELETE, about (rows that expire at the same instant go together). */
  chunk?: number;
}

export interface SweepResult {
  events: number;
  visitors: number;
  /** Pending identities never vouched for within PENDING_IDENTITY_MS. */
  pendingIdentities: number;
  shoppers: number;
  /** Product interests past their 30 days (back in stock and price drops). */
  interests: number;
}

const HOUR_MS = 3_600_000;
const STATS_KEPT_HOURS = 48;

export interface StorefrontSweeper {
  /** Deletes what expired by now; returns how many rows of each kind. */
  sweep(): Promise<SweepResult>;
  start(): void;
  stop(): void;
}

export function createStorefrontSweeper(deps: StorefrontSweeperDeps): StorefrontSweeper {
  const failures = new LoopFailures(new LogOnce(deps.logger, 60 * 60_000), deps.metrics.loopFailures);
  const chunk = Math.max(1, deps.chunk ?? 5000);
  const expiredLog = new LogOnce(deps.logger, HOUR_MS, () => deps.now().getTime());
  /** Events dropped unsent after waiting their whole window for product data, by shop, in this sweep. */
  let unavailable = new Map<string, number>();
  /** Events past their window; those that waited for product data are counted per shop (in the hour of the sweep) first. */
  const events: ExpiringTable = {
    ...expiringTable(deps.db.pixelEvent),
    deleteUpTo: (at: Date) =>
      deps.db.$transaction(async (tx) => {
        const byShop = await tx.pixelEvent.groupBy({
          by: ['shopId'],
          where: { expiresAt: { lte: at }, describeAt: { not: null } },
          _count: { _all: true },
        });
        const hour = Math.floor(deps.now().getTime() / HOUR_MS);
        for (const { shopId, _count } of byShop) {
          await tx.$executeRaw(Prisma.sql`
            INSERT INTO "PixelStat" ("shopId", "hour", "unavailable") VALUES (${shopId}, ${hour}, ${_count._all})
            ON CONFLICT ("shopId", "hour") DO UPDATE SET "unavailable" = "PixelStat"."unavailable" + excluded."unavailable"`);
        }
        const res = await tx.pixelEvent.deleteMany({ where: { expiresAt: { lte: at } } });
        for (const { shopId, _count } of byShop) unavailable.set(shopId, (unavailable.get(shopId) ?? 0) + _count._all);
        return res;
      }),
  };
  const visitors = expiringTable(deps.db.pixelVisitor);
  const shoppers = expiringTable(deps.db.pixelShopper);
  const interests = expiringTable(deps.db.productInterest);
  /** Pending identities never vouched for: counted per shop (in the hour of the sweep), then deleted, a chunk at a time. */
  const pendingIdentities: ExpiringTable = {
    ...expiringTable(deps.db.pixelClaim),
    deleteUpTo: (at: Date) =>
      deps.db.$transaction(async (tx) => {
        const byShop = await tx.pixelClaim.groupBy({ by: ['shopId'], where: { expiresAt: { lte: at } }, _count: { _all: true } });
        if (byShop.length === 0) return { count: 0 };
        const hour = Math.floor(deps.now().getTime() / HOUR_MS);
        for (const { shopId, _count } of byShop) {
          await tx.$executeRaw(Prisma.sql`
            INSERT INTO "PixelStat" ("shopId", "hour", "expired") VALUES (${shopId}, ${hour}, ${_count._all})
            ON CONFLICT ("shopId", "hour") DO UPDATE SET "expired" = "PixelStat"."expired" + excluded."expired"`);
        }
        return tx.pixelClaim.deleteMany({ where: { expiresAt: { lte: at } } });
      }),
  };
  async function sweep(): Promise<SweepResult> {
    const at = deps.now();
    unavailable = new Map();
    const expired = {
      events: await deleteExpired(events, at, chunk),
      visitors: await deleteExpired(visitors, at, chunk),
      pendingIdentities: await deleteExpired(pendingIdentities, at, chunk),
      shoppers: await deleteExpired(shoppers, at, chunk),
      interests: await deleteExpired(interests, at, chunk),
    };
    await deps.db.pixelStat.deleteMany({ where: { hour: { lt: Math.floor(at.getTime() / HOUR_MS) - STATS_KEPT_HOURS } } });
    if (expired.events) deps.metrics.pixelEvents.inc({ outcome: 'expired' }, expired.events);
    for (const [shopId, n] of unavailable) {
      deps.metrics.pixelProductsDropped.inc({ reason: 'expired' }, n);
      expiredLog.log(
        'warn',
        shopId,
        { shopId, events: n },
        'storefront events dropped unsent: Shopify did not describe their products within their window (WAITING_EVENT_MS)',
      );
    }
    if (expired.pendingIdentities) deps.metrics.pendingIdentities.inc({ outcome: 'expired' }, expired.pendingIdentities);
    if (expired.events || expired.visitors || expired.pendingIdentities)
      deps.logger.info(expired, 'storefront: expired anonymous events, identities and pending identities never vouched for deleted');
    return expired;
  }
  const task = periodicTask({
    run: sweep,
    everyMs: deps.everyMs ?? 5 * 60_000,
    onFailure: (err) => failures.report('pixel_sweep', err, 'storefront expiry sweep failed; retried at the next tick', { level: 'warn' }),
  });
  return { sweep: task.run, start: task.start, stop: task.stop };
}
