// What the merchant sees of the pipeline: the delivery log, one delivery with its attempts,
// manual retry, the test event, and stats.
import { Prisma, type OutboxMessage } from '@prisma/client';
import type { Db, DbProvider } from '../db/client';
import { dialectOf } from '../db/dialects';
import { buildTestEvent } from '../mapping';
import { HISTORY } from '../outbox/classes';
import type { OutboxRepository } from '../outbox/repository';
import { Sql } from '../db/sql';
import type { ReceiptStore } from '../intake/receipt-store';
import { UseCaseError } from './errors';
import { insertNew } from '../outbox/store-messages';

export const DELIVERY_STATUSES = [
  'queued',
  'delivering',
  'delivered',
  'delivered_unconfirmed',
  'held',
  'dead',
  'cancelled',
  'skipped',
  'expired',
] as const;

export interface DeliveryView {
  id: string;
  topic: string;
  event_name: string;
  status: string;
  attempts: number;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
  email: string | null;
  run_at: string;
  held_reason: string | null;
  historical: boolean;
}

export function deliveryView(m: OutboxMessage): DeliveryView {
  return {
    id: String(m.id),
    topic: m.topic,
    event_name: m.eventName,
    status: m.status,
    attempts: m.attempts,
    last_error: m.lastError,
    created_at: m.createdAt.toISOString(),
    delivered_at: m.deliveredAt?.toISOString() ?? null,
    email: m.email,
    run_at: m.runAt.toISOString(),
    held_reason: m.heldReason,
    historical: m.deliveryClass === HISTORY,
  };
}

export interface ActivityDeps {
  db: Db;
  provider: DbProvider;
  repo: OutboxRepository;
  /** The intake's lag, shown when webhooks wait to be processed. */
  receipts: Pick<ReceiptStore, 'lag'>;
  now?: () => Date;
  onEnqueued?: (shopId: string) => void;
}

export function createActivity(deps: ActivityDeps) {
  const { db, repo } = deps;
  const now = deps.now ?? (() => new Date());
  const sql = new Sql(db, deps.provider);

  async function percentile(shopId: string, since: Date, total: number, q: number): Promise<number | null> {
    if (total === 0) return null;
    const rows = await db.outboxMessage.findMany({
      where: { shopId, status: 'delivered', deliveryClass: { lt: HISTORY }, deliveredAt: { gte: since }, latencyMs: { not: null } },
      orderBy: { latencyMs: 'asc' },
      skip: Math.min(total - 1, Math.floor(q * total)),
      take: 1,
      select: { latencyMs: true },
    });
    const ms = rows[0]?.latencyMs;
    return ms === undefined || ms === null ? null : Number(ms);
  }

  return {
    async list(shopId: string, q: { status?: string; limit: number; cursor?: number }) {
      const rows = await db.outboxMessage.findMany({
        where: { shopId, ...(q.status ? { status: q.status } : {}), ...(q.cursor ? { id: { lt: q.cursor } } : {}) },
        orderBy: { id: 'desc' },
        take: q.limit + 1,
      });
      const page = rows.slice(0, q.limit);
      return { deliveries: page.map(deliveryView), next_cursor: rows.length > q.limit ? String(page[page.length - 1]!.id) : null };
    },

    async get(shopId: string, id: number) {
      const m = await db.outboxMessage.findFirst({ where: { id, shopId }, include: { deliveryLogs: { orderBy: { id: 'asc' } } } });
      if (!m) throw new UseCaseError('not_found', 'No such delivery');
      return {
        ...deliveryView(m),
        body: m.kind === 'event' ? (JSON.parse(m.body) as unknown) : null,
        attempt_log: m.deliveryLogs.map((a) => ({
          attempt: a.attempt,
          started_at: a.startedAt.toISOString(),
          duration_ms: a.durationMs,
          status_code: a.statusCode,
          outcome: a.outcome,
          error: a.error,
        })),
      };
    },

    async retry(shopId: string, id: number): Promise<void> {
      const r = await repo.retry(shopId, id, now());
      if (r === 'not_found') throw new UseCaseError('not_found', 'No such delivery');
      if (r === 'not_retryable') throw new UseCaseError('not_retryable', 'Only dead, held or unconfirmed deliveries can be retried');
      deps.onEnqueued?.(shopId);
    },

    async testEvent(shop: { id: string; domain: string }, email: string): Promise<string> {
      const connection = await db.connection.findUnique({ where: { shopId: shop.id } });
      if (!connection) throw new UseCaseError('not_connected', 'Connect an API key before sending a test event.');
      const at = now();
      const sourceId = `test:${at.getTime().toString(36)}:${Math.random().toString(36).slice(2, 8)}`;
      const msg = buildTestEvent({ shopDomain: shop.domain, email, sourceId, now: at });
      const status = connection.status === 'connected' ? ('queued' as const) : ('held' as const);
      await db.$transaction((tx) =>
        insertNew(tx, deps.provider, [msg], { shopId: shop.id, status, heldReason: status === 'held' ? 'invalid_key' : null }, at),
      );
      const row = await db.outboxMessage.findUniqueOrThrow({
        where: { shopId_sourceId: { shopId: shop.id, sourceId } },
        select: { id: true },
      });
      deps.onEnqueued?.(shop.id);
      return String(row.id);
    },

    async stats(shop: { id: string; domain: string }) {
      const shopId = shop.id;
      const t = now();
      const since = new Date(t.getTime() - 24 * 3_600_000);
      const [byStatus, delivered24h, oldest] = await Promise.all([
        db.outboxMessage.groupBy({ by: ['status'], where: { shopId }, _count: { _all: true } }),
        db.outboxMessage.count({ where: { shopId, status: 'delivered', deliveredAt: { gte: since } } }),
        db.outboxMessage.findFirst({
          where: { shopId, status: 'queued', runAt: { lte: t } },
          orderBy: { runAt: 'asc' },
          select: { runAt: true },
        }),
      ]);
      const count = (s: string) => byStatus.find((b) => b.status === s)?._count._all ?? 0;
      // latency of live events only: an import's backlog would read as minutes of "latency"
      const live24h = await db.outboxMessage.count({
        where: { shopId, status: 'delivered', deliveryClass: { lt: HISTORY }, deliveredAt: { gte: since }, latencyMs: { not: null } },
      });
      const [p50, p95] = await Promise.all([percentile(shopId, since, live24h, 0.5), percentile(shopId, since, live24h, 0.95)]);
      const hourExpr = Prisma.raw(dialectOf(deps.provider).epochHour('"deliveredAt"'));
      const hours = await sql.query<{ h: bigint | number; n: bigint | number }>(Prisma.sql`
        SELECT ${hourExpr} AS h, COUNT(*) AS n FROM "OutboxMessage"
        WHERE "shopId" = ${shopId} AND "status" = 'delivered' AND "deliveredAt" >= ${sql.ts(since)}
        GROUP BY 1`);
      const firstHour = Math.floor(since.getTime() / 3_600_000) + 1;
      const perHour = new Map(hours.map((r) => [Number(r.h), Number(r.n)]));
      const lag = await deps.receipts.lag(t, shop.domain);
      return {
        queued: count('queued'),
        delivering: count('delivering'),
        delivered_24h: delivered24h,
        dead: count('dead'),
        held: count('held'),
        cancelled: count('cancelled'),
        skipped: count('skipped'),
        delivered_unconfirmed: count('delivered_unconfirmed'),
        // webhooks stored but not yet turned into deliveries (stage 2 behind)
        received_unprocessed: lag.pending,
        received_unprocessed_oldest_age_s: Math.round(lag.oldestAgeS),
        oldest_queued_age_s: oldest ? Math.max(0, Math.round((t.getTime() - oldest.runAt.getTime()) / 1000)) : 0,
        p50_latency_ms: p50,
        p95_latency_ms: p95,
        hourly: Array.from({ length: 24 }, (_, i) => ({
          hour: new Date((firstHour + i) * 3_600_000).toISOString(),
          delivered: perHour.get(firstHour + i) ?? 0,
        })),
      };
    },

    async dataRequests(shopId: string) {
      const rows = await db.dataExport.findMany({ where: { shopId }, orderBy: { id: 'desc' }, take: 100 });
      return rows.map((r) => ({
        id: String(r.id),
        request_id: r.requestId,
        customer_id: r.customerId,
        created_at: r.createdAt.toISOString(),
      }));
    },

    async dataRequest(shopId: string, id: number) {
      const row = await db.dataExport.findFirst({ where: { id, shopId } });
      if (!row) throw new UseCaseError('not_found', 'No such data request');
      return JSON.parse(row.content) as unknown;
    },
  };
}

export type Activity = ReturnType<typeof createActivity>;
