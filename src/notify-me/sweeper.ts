// Subscriptions expire: NOTIFY_ME_KEEP_DAYS after the latest subscribe, a row nobody renewed is
// deleted, notified or not. DELETEs on the expiresAt index, every few minutes, the oldest `chunk`
// or so at a time with the event loop turning between them, so an idle table costs one indexed
// look-up a tick, whatever the number of shops.
import type { Db } from '../db/client';
import { inChunks } from '../db/raw';
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
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();

  async function sweep(): Promise<number> {
    const at = deps.now();
    const deleted = await inChunks(async () => {
      const edge = await db.stockSubscription.findFirst({
        where: { expiresAt: { lte: at } },
        orderBy: { expiresAt: 'asc' },
        skip: chunk - 1,
        select: { expiresAt: true },
      });
      const { count } = await db.stockSubscription.deleteMany({ where: { expiresAt: { lte: edge ? edge.expiresAt : at } } });
      return { count, more: edge !== null };
    });
    if (deleted) deps.logger.info({ deleted }, 'notify-me: expired back-in-stock subscriptions deleted');
    return deleted;
  }

  const sweeper: SubscriptionSweeper = {
    sweep: () => {
      const p = running.then(sweep, sweep);
      running = p.catch(() => undefined);
      return p;
    },
    start() {
      if (timer) return;
      timer = setInterval(
        () => {
          sweeper
            .sweep()
            .catch((err: unknown) =>
              failures.report('stock_sweep', err, 'back-in-stock subscription sweep failed; retried at the next tick', { level: 'warn' }),
            );
        },
        deps.everyMs ?? 10 * 60_000,
      );
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
  return sweeper;
}
