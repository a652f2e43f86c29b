// Storefront events whose products Shopify has not described yet are looked up again by stage 2,
// in their shop's order: this pass finds the shops with such events due (an indexed read on
// PixelEvent.describeAt: nothing waiting costs one index probe) and stores a retry receipt for each
// (kind 'pixel', topic PIXEL_RETRY_TOPIC, no personal data), at most one per shop and pass over
// every worker process (its webhook id names the shop and the pass), then wakes stage 2. The
// receipt goes through the shop's receipt partition like its storefront batches, so a retry never
// races them: stage 2 drains the due clients (stage.ts), within the shop's lookup budget.
import { Prisma } from '@prisma/client';
import type { Db } from '../../db/client';
import { Sql } from '../../db/sql';
import { rawOf } from '../../db/client';
import type { NewReceipt, ReceiptStore } from '../../intake/receipt-store';
import { LogOnce, LoopFailures } from '../../observability/log-once';
import type { Logger } from '../../observability/logger';
import type { Metrics } from '../../observability/metrics';
import { periodicTask } from '../../lib/periodic-task';
import { PIXEL_RETRY_TOPIC } from './shopper-events';

/** How often the pass looks for due events: well under PRODUCT_RETRY_BACKOFF's first wait. */
export const RETRY_PASS_MS = 15_000;
/** Shops given a retry per pass at most (the others at the next). */
const SHOPS_PER_PASS = 500;

export interface ProductRetriesDeps {
  db: Db;
  receipts: Pick<ReceiptStore, 'insert'>;
  /** Wakes stage 2 (in this process and others). */
  wake(): void;
  logger: Logger;
  metrics: Metrics;
  now: () => Date;
  everyMs?: number;
}

export interface ProductRetries {
  /** Stores a retry receipt for each shop with events due for a product lookup; returns how many were new. */
  run(): Promise<number>;
  start(): void;
  stop(): void;
}

export function createProductRetries(deps: ProductRetriesDeps): ProductRetries {
  const everyMs = deps.everyMs ?? RETRY_PASS_MS;
  const sql = new Sql(deps.db, rawOf(deps.db).provider);
  const failures = new LoopFailures(new LogOnce(deps.logger, 60 * 60_000), deps.metrics.loopFailures);

  async function run(): Promise<number> {
    const now = deps.now();
    const due = await deps.db.$queryRaw<Array<{ shopId: string }>>(Prisma.sql`
      SELECT "shopId" FROM "PixelEvent" WHERE "describeAt" <= ${sql.ts(now)} AND "expiresAt" > ${sql.ts(now)}
      GROUP BY "shopId" LIMIT ${sql.int(SHOPS_PER_PASS)}`);
    if (due.length === 0) return 0;
    // only shops that take storefront events now: the others' events wait out their window
    const shops = await deps.db.shop.findMany({
      where: {
        id: { in: due.map((d) => d.shopId) },
        uninstalledAt: null,
        connection: { isNot: null },
        pixel: { state: { not: 'removed' } },
      },
      select: { domain: true },
    });
    const pass = Math.floor(now.getTime() / everyMs);
    const receipts: NewReceipt[] = shops.map((s) => ({
      webhookId: `${PIXEL_RETRY_TOPIC}:${s.domain}:${pass}`,
      shopDomain: s.domain,
      topic: PIXEL_RETRY_TOPIC,
      kind: 'pixel',
      body: '{}',
      apiVersion: null,
      triggeredAt: null,
      receivedAt: now,
    }));
    const stored = await deps.receipts.insert(receipts);
    if (stored.size) deps.wake();
    return stored.size;
  }

  return periodicTask({
    run,
    everyMs,
    onFailure: (err) =>
      failures.report('pixel_retry', err, 'storefront product retries failed; tried again at the next tick', { level: 'warn' }),
  });
}
