// Waiting storefront state expires: anonymous events past their window (never identified, so
// never sent) and identities not seen for PIXEL_IDENTITY_DAYS. DELETEs on each table's expiresAt
// index, every few minutes: what waits costs no CPU, whatever the number of visitors. A day of
// anonymous traffic is millions of rows, so each DELETE takes the oldest `chunk` or so, and the
// event loop turns between them (on SQLite a statement holds it until done).
import type { Db } from '../db/client';
import { inChunks } from '../db/raw';
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
  /** Rows expired by `at`, through the expiresAt index: each DELETE up to the `chunk`-th oldest expiry. */
  const deleteExpired = (
    table: {
      /** The expiresAt of the `skip`-th oldest row expired by `at`, if there are that many. */
      edge(at: Date, skip: number): Promise<{ expiresAt: Date } | null>;
      deleteUpTo(at: Date): Promise<{ count: number }>;
    },
    at: Date,
  ): Promise<number> =>
    inChunks(async () => {
      const edge = await table.edge(at, chunk - 1);
      const { count } = await table.deleteUpTo(edge ? edge.expiresAt : at);
      return { count, more: edge !== null };
    });
  const events = {
    edge: (at: Date, skip: number) => deps.db.pixelEvent.findFirst({ where: { expiresAt: { lte: at } }, orderBy: { expiresAt: 'asc' }, skip, select: { expiresAt: true } }),
    deleteUpTo: (at: Date) => deps.db.pixelEvent.deleteMany({ where: { expiresAt: { lte: at } } }),
  };
  const visitors = {
    edge: (at: Date, skip: number) => deps.db.pixelVisitor.findFirst({ where: { expiresAt: { lte: at } }, orderBy: { expiresAt: 'asc' }, skip, select: { expiresAt: true } }),
    deleteUpTo: (at: Date) => deps.db.pixelVisitor.deleteMany({ where: { expiresAt: { lte: at } } }),
  };
  async function sweep() {
    const at = deps.now();
    const expired = { events: await deleteExpired(events, at), visitors: await deleteExpired(visitors, at) };
    if (expired.events) deps.metrics.pixelEvents.inc({ outcome: 'expired' }, expired.events);
    if (expired.events || expired.visitors) deps.logger.info(expired, 'storefront: expired anonymous events and identities deleted');
    return expired;
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
