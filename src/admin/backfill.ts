// The historical import as the merchant sees it: start one (one at a time per shop), follow
// its progress with an ETA, cancel it. The runner (src/backfill/runner.ts) does the work.
import type { Backfill } from '@prisma/client';
import type { Db } from '../db/client';
import { ACTIVE_STATES, KINDS, parseKinds, parseProgress, type Kind } from '../backfill/progress';
import { UseCaseError } from './errors';

export interface BackfillDeps {
  db: Db;
  now?: () => Date;
  /** Tells the runner there is work (in-process wake-up). */
  wake?: () => void;
  /** Orders since this many days when no date is given. Default 365. */
  defaultSinceDays?: number;
}

export interface StartInput {
  /** A date, 'all', or undefined for the default (one year). Applies to orders. */
  since?: Date | 'all';
  kinds?: Kind[];
}

export interface StartResult {
  status: 'started';
  backfill_id: string;
}

export interface BackfillView {
  backfill_id: string | null;
  /** none (never imported) | pending | running | completed | failed | cancelled */
  state: string;
  kinds: Kind[];
  since: string | null;
  /** Customers and orders read from Shopify. */
  processed: number;
  /** Customers and orders to read: null until Shopify has counted them. */
  total: number | null;
  /** Messages queued for sending (objects already sent by an earlier import are not queued again). */
  queued: number;
  delivered: number;
  /** Read but not sent: no email, or an order already sent live. */
  skipped: number;
  eta_s: number | null;
  started_at: string | null;
  finished_at: string | null;
  error: string | null;
}

const EMPTY: BackfillView = {
  backfill_id: null,
  state: 'none',
  kinds: [],
  since: null,
  processed: 0,
  total: null,
  queued: 0,
  delivered: 0,
  skipped: 0,
  eta_s: null,
  started_at: null,
  finished_at: null,
  error: null,
};

/**
 * Seconds until everything is sent, at the workspace's rate: what is still waiting in the
 * outbox plus what is still to be read. Unknown while Shopify has not counted the objects;
 * null once the import failed or was cancelled.
 */
export function etaSeconds(v: {
  state: string;
  total: number | null;
  processed: number;
  waiting: number;
  ratePerSec: number;
}): number | null {
  if (v.state === 'failed' || v.state === 'cancelled' || v.state === 'none') return null;
  const toRead = v.state === 'completed' ? 0 : v.total === null ? null : Math.max(0, v.total - v.processed);
  if (toRead === null) return null;
  return Math.ceil((v.waiting + toRead) / Math.max(1, v.ratePerSec));
}

export function createBackfillUseCases(deps: BackfillDeps) {
  const { db } = deps;
  const now = deps.now ?? (() => new Date());

  async function view(b: Backfill): Promise<BackfillView> {
    const [byStatus, connection] = await Promise.all([
      db.outboxMessage.groupBy({ by: ['status'], where: { backfillId: b.id }, _count: { _all: true } }),
      db.connection.findUnique({ where: { shopId: b.shopId }, select: { workspaceId: true } }),
    ]);
    const count = (...statuses: string[]) => byStatus.filter((r) => statuses.includes(r.status)).reduce((n, r) => n + r._count._all, 0);
    const pacer = connection
      ? await db.workspacePacer.findUnique({ where: { workspaceId: connection.workspaceId }, select: { limitPerSec: true } })
      : null;
    const progress = parseProgress(b.progress);
    const skipped = KINDS.reduce((n, k) => n + progress.counts[k].skipped, 0);
    return {
      backfill_id: b.id,
      state: b.state,
      kinds: parseKinds(b.kinds),
      since: b.since?.toISOString() ?? null,
      processed: b.processed,
      total: b.total,
      queued: b.queued,
      delivered: count('delivered'),
      skipped,
      eta_s: etaSeconds({
        state: b.state,
        total: b.total,
        processed: b.processed,
        waiting: count('queued', 'delivering', 'held'),
        ratePerSec: pacer?.limitPerSec ?? 10,
      }),
      started_at: b.startedAt.toISOString(),
      finished_at: b.finishedAt?.toISOString() ?? null,
      error: b.error ?? (ACTIVE_STATES.includes(b.state as (typeof ACTIVE_STATES)[number]) ? (progress.note ?? null) : null),
    };
  }

  return {
    /** Throws UseCaseError not_connected, or backfill_running (with the running import's backfill_id). */
    async start(shopId: string, input: StartInput): Promise<StartResult> {
      const connection = await db.connection.findUnique({ where: { shopId }, select: { status: true } });
      if (!connection) throw new UseCaseError('not_connected', 'Connect the email service before importing the store’s history');
      const at = now();
      const since = input.since === 'all' ? null : (input.since ?? new Date(at.getTime() - (deps.defaultSinceDays ?? 365) * 86_400_000));
      const kinds = KINDS.filter((k) => (input.kinds ?? KINDS).includes(k));
      const result = await db.$transaction(async (tx): Promise<StartResult | { status: 'running'; backfill_id: string }> => {
        // touching the shop row serialises concurrent starts for one shop (a row lock on PostgreSQL)
        await tx.shop.update({ where: { id: shopId }, data: { updatedAt: at } });
        const running = await tx.backfill.findFirst({ where: { shopId, state: { in: [...ACTIVE_STATES] } }, select: { id: true } });
        if (running) return { status: 'running', backfill_id: running.id };
        const row = await tx.backfill.create({ data: { shopId, state: 'pending', kinds: JSON.stringify(kinds), since, startedAt: at } });
        return { status: 'started', backfill_id: row.id };
      });
      if (result.status === 'running') {
        throw new UseCaseError('backfill_running', 'An import is already running for this store; cancel it or wait for it to finish', {
          backfill_id: result.backfill_id,
        });
      }
      deps.wake?.();
      return result;
    },

    /** The shop's latest import, or state "none". */
    async status(shopId: string): Promise<BackfillView> {
      const latest = await db.backfill.findFirst({ where: { shopId }, orderBy: [{ startedAt: 'desc' }, { id: 'desc' }] });
      return latest ? view(latest) : { ...EMPTY };
    },

    /**
     * Cancels the shop's import: a running one stops (the runner notices at its next step; its
     * writes are fenced on the state), and what it queued but did not send yet is removed. An
     * import that finished reading but is still being sent is cancelled the same way. Throws
     * UseCaseError no_backfill_running when there is nothing to cancel.
     */
    async cancel(shopId: string): Promise<BackfillView & { removed: number }> {
      const nothingToCancel = () => new UseCaseError('no_backfill_running', 'No import is running for this store');
      const b = await db.backfill.findFirst({ where: { shopId }, orderBy: [{ startedAt: 'desc' }, { id: 'desc' }] });
      if (!b) throw nothingToCancel();
      const cancellable =
        ACTIVE_STATES.includes(b.state as (typeof ACTIVE_STATES)[number]) ||
        (b.state === 'completed' &&
          (await db.outboxMessage.count({ where: { backfillId: b.id, status: { in: ['queued', 'held'] } } })) > 0);
      if (!cancellable) throw nothingToCancel();
      const removed = await db.$transaction(async (tx) => {
        // the state first: on PostgreSQL this waits for a batch the runner is committing
        const res = await tx.backfill.updateMany({
          where: { id: b.id, state: b.state },
          data: { state: 'cancelled', finishedAt: now(), lockedBy: null, lockedUntil: null },
        });
        if (res.count === 0) return 0;
        const del = await tx.outboxMessage.deleteMany({ where: { backfillId: b.id, status: { in: ['queued', 'held'] } } });
        if (del.count) await tx.backfill.update({ where: { id: b.id }, data: { queued: { decrement: del.count } } });
        return del.count;
      });
      const fresh = await db.backfill.findUniqueOrThrow({ where: { id: b.id } });
      return { ...(await view(fresh)), removed };
    },
  };
}

export type BackfillUseCases = ReturnType<typeof createBackfillUseCases>;
