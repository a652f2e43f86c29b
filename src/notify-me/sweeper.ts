// Subscriptions expire: NOTIFY_ME_KEEP_DAYS after the latest subscribe, a row nobody renewed is
// deleted, notified or not, every ten minutes, a chunk at a time (db/expiry.ts).
import type { Db } from '../db/client';
import { deleteExpired, expiringTable } from '../db/expiry';
import { periodicTask } from '../lib/periodic-task';
import { LogOnce, LoopFailures } from '../observability/log-once';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';

export interface SubscriptionSweeperDeps {
  db: Db;
  logger: Logger;
  metrics: Metrics;
  now: () => Date;
  everyMs?: number;
  /** Rows per DELETE, about (rows that expire at the same instant go together). */
  chunk?: number;
}

export interface SubscriptionSweeper {
  /** Deletes the subscriptions expired by now; returns how many. */
  sweep(): Promise<number>;
  start(): void;
  stop(): void;
}

export function createSubscriptionSweeper(deps: SubscriptionSweeperDeps): SubscriptionSweeper {
  const { db } = deps;
  const chunk = Math.max(1, deps.chunk ?? 5000);
  const failures = new LoopFailures(new LogOnce(deps.logger, 60 * 60_000), deps.metrics.loopFailures);
  const subscriptions = expiringTable(db.stockSubscription);

  async function sweep(): Promise<number> {
    const deleted = await deleteExpired(subscriptions, deps.now(), chunk);
    if (deleted) deps.logger.info({ deleted }, 'notify-me: expired back-in-stock subscriptions deleted');
    return deleted;
  }

  const task = periodicTask({
    run: sweep,
    everyMs: deps.everyMs ?? 10 * 60_000,
    onFailure: (err) =>
      failures.report('stock_sweep', err, 'back-in-stock subscription sweep failed; retried at the next tick', { level: 'warn' }),
  });
  return { sweep: task.run, start: task.start, stop: task.stop };
}
