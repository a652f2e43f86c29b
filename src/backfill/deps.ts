// What the backfill runner and each of its jobs are given: the database, the bulk source and
// the tuning. Its own module so that runner.ts (which starts jobs) and job.ts (which reads the
// tuning) both depend on it and not on each other.
import type { Db, DbProvider } from '../db/client';
import type { ProductLookup } from '../mapping/items';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import type { BulkSource } from './shopify-bulk';

export interface BackfillRunnerDeps {
  db: Db;
  provider: DbProvider;
  source: BulkSource;
  logger: Logger;
  /** Counts the runner's failures (connector_background_failures_total). */
  metrics?: Metrics;
  now?: () => Date;
  /** Tells the delivery worker a shop has new due work. */
  onEnqueued?: (shopId: string) => void;
  /** Product images and links for imported orders' line items (the live events' cache). */
  enrich?: (
    shop: { id: string; domain: string },
    items: Array<{ product_id: string | null; variant_id: string | null }>,
  ) => Promise<ProductLookup>;
  runnerId?: string;
  /** How often to look for backfills to run. Default 2 000 ms. */
  pollMs?: number;
  /** Lease on a running backfill; renewed every third of it. Default 60 000 ms. */
  leaseMs?: number;
  /** Root objects (customers, orders) per transaction. Default 500. */
  batchSize?: number;
  /** Reading pauses while the shop has this many historical messages queued. Default 10 000. */
  maxQueued?: number;
  /** Polling of a running bulk operation: first and longest interval. Default [1 000, 10 000] ms. */
  opPollMs?: [number, number];
  /** Backfills this process runs at once. Default 2. */
  maxConcurrent?: number;
  /** Consecutive transient failures before a backfill fails. Default 8. */
  maxAttempts?: number;
  /** First retry delay, doubled each time up to a minute. Default 1 000 ms. */
  retryBaseMs?: number;
  /** How often a paused import (API key refused) checks again. Default 5 000 ms. */
  pausePollMs?: number;
  /** Longest wait for room with the download open; past it the connection is closed and reopened later. Default 20 000 ms. */
  holdOpenMs?: number;
}
