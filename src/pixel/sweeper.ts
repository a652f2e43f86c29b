// Waiting storefront state expires: anonymous events past their window (never identified, so
// never sent) and identities not seen for PIXEL_IDENTITY_DAYS. DELETEs on each table's expiresAt
// index, every few minutes: what waits costs no CPU, whatever the number of visitors. A day of
// anonymous traffic is millions of rows, so each DELETE takes the oldest `chunk` or so, and the
// event loop turns between them (on SQLite a statement holds it until done).
import type { Db } from '../db/client';
import { turnOfTheLoop } from '../db/raw';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';

export interface PixelSweeperDeps {
  db: Db;
  logger: Logger;
  metrics: Metrics;
  now: () => Date;
  everyMs?: number;
  /** Rows per DELETE, about (rows that expire at the same instant go together). */
  chunk?: number;
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
  const chunk = Math.max(1, deps.chunk ?? 5000);
  type Expiring = {
    /** The expiresAt of the `skip`-th oldest row expired by `at`, if there are that many. */
    edge(at: Date, skip: number): Promise<{ expiresAt: Date } | null>;
    deleteUpTo(at: Date): Promise<{ count: number }>;
  };
  const tables: Record<'events' | 'visitors', Expiring> = {
    events: {
      edge: (at, skip) => deps.db.pixelEvent.findFirst({ where: { expiresAt: { lte: at } }, orderBy: { expiresAt: 'asc' }, skip, select: { expiresAt: true } }),
      deleteUpTo: (at) => deps.db.pixelEvent.deleteMany({ where: { expiresAt: { lte: at } } }),
    },
    visitors: {
      edge: (at, skip) => deps.db.pixelVisitor.findFirst({ where: { expiresAt: { lte: at } }, orderBy: { expiresAt: 'asc' }, skip, select: { expiresAt: true } }),
      deleteUpTo: (at) => deps.db.pixelVisitor.deleteMany({ where: { expiresAt: { lte: at } } }),
    },
  };
  async function deleteExpired(table: Expiring, at: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const edge = await table.edge(at, chunk - 1);
      total += (await table.deleteUpTo(edge ? edge.expiresAt : at)).count;
      if (!edge) return total;
      await turnOfTheLoop();
    }
  }
  async function sweep() {
    const at = deps.now();
    const events = await deleteExpired(tables.events, at);
    const visitors = await deleteExpired(tables.visitors, at);
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
