// Waiting storefront state expires: anonymous events past their window (never identified, so
// never sent) and identities not seen for PIXEL_IDENTITY_DAYS. One DELETE per table on its
// expiresAt index, every few minutes: what waits costs no CPU, whatever the number of visitors.
import type { Db } from '../db/client';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';

export interface PixelSweeperDeps {
  db: Db;
  logger: Logger;
  metrics: Metrics;
  now: () => Date;
  everyMs?: number;
}

export interface PixelSweeper {
  /** Deletes what expired by now; returns how many events and visitors. */
  sweep(): Promise<{ events: number; visitors: number }>;
  start(): void;
  stop(): void;
}

export function createPixelSweeper(deps: PixelSweeperDeps): PixelSweeper {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  async function sweep() {
    const at = deps.now();
    const events = (await deps.db.pixelEvent.deleteMany({ where: { expiresAt: { lte: at } } })).count;
    const visitors = (await deps.db.pixelVisitor.deleteMany({ where: { expiresAt: { lte: at } } })).count;
    if (events) deps.metrics.pixelEvents.inc({ outcome: 'expired' }, events);
    if (events || visitors) deps.logger.info({ events, visitors }, 'storefront: expired anonymous events and identities deleted');
    return { events, visitors };
  }
  const sweeper: PixelSweeper = {
    sweep: () => {
      const p = running.then(sweep, sweep);
      running = p.catch(() => undefined);
      return p;
    },
    start() {
      if (timer) return;
      timer = setInterval(() => {
        sweeper.sweep().catch((err: unknown) => deps.logger.warn({ err: (err as Error).message }, 'storefront expiry sweep failed; retried at the next tick'));
      }, deps.everyMs ?? 5 * 60_000);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
  return sweeper;
}
