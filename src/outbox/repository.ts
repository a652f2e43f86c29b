// The outbox: durable messages with explicit states, and their attempts in a separate table
// (Svix's message / message-attempt split). Claims take due messages in one statement that
// also counts the attempt; completion is fenced on the claimer's id so a message reclaimed
// after a lock expiry is never overwritten by a late finisher.
import { Prisma, type OutboxMessage } from '@prisma/client';
import type { Db, DbProvider } from '../db/client';
import { Sql } from './sql';

export type MessageStatus = 'queued' | 'delivering' | 'delivered' | 'held' | 'dead' | 'cancelled';
export type HeldReason = 'invalid_key' | 'disconnected' | 'uninstalled';

export interface AttemptRecord {
  attempt: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  outcome: string;
  error: string | null;
  workerId?: string;
}

export class OutboxRepository {
  private readonly sql: Sql;
  constructor(
    readonly db: Db,
    readonly provider: DbProvider,
  ) {
    this.sql = new Sql(db, provider);
  }

  /**
   * Shops that have queued messages, by a loose index scan over (status, shopId): one index
   * probe per shop, whatever the backlog's depth.
   */
  async shopsWithQueuedWork(limit = 1000): Promise<string[]> {
    const rows = await this.sql.query<{ shopId: string }>(Prisma.sql`
      WITH RECURSIVE s("shopId", n) AS (
        SELECT (SELECT "shopId" FROM "OutboxMessage" WHERE "status" = 'queued' ORDER BY "shopId" LIMIT 1), 1
        UNION ALL
        SELECT (SELECT m."shopId" FROM "OutboxMessage" m WHERE m."status" = 'queued' AND m."shopId" > s."shopId" ORDER BY m."shopId" LIMIT 1), s.n + 1
        FROM s WHERE s."shopId" IS NOT NULL AND s.n < ${this.sql.int(limit)}
      ) SELECT "shopId" FROM s WHERE "shopId" IS NOT NULL`);
    return rows.map((r) => r.shopId);
  }

  /** Claims up to `limit` due messages of one shop, live lane first, marking them delivering. */
  async claim(shopId: string, workerId: string, limit: number, now: Date, lockMs: number): Promise<OutboxMessage[]> {
    const until = new Date(now.getTime() + lockMs);
    const lockClause = Prisma.raw(this.provider === 'postgres' ? 'FOR UPDATE SKIP LOCKED' : '');
    const ids = await this.sql.query<{ id: number }>(Prisma.sql`
      UPDATE "OutboxMessage" SET "status" = 'delivering', "attempts" = "attempts" + 1,
        "lockedBy" = ${workerId}, "lockedUntil" = ${this.sql.ts(until)}, "updatedAt" = ${this.sql.ts(now)}
      WHERE "id" IN (
        SELECT "id" FROM "OutboxMessage"
        WHERE "status" = 'queued' AND "shopId" = ${shopId} AND "runAt" <= ${this.sql.ts(now)}
        ORDER BY "lane", "runAt", "id" LIMIT ${this.sql.int(limit)} ${lockClause}
      ) RETURNING "id"`);
    if (ids.length === 0) return [];
    const rows = await this.db.outboxMessage.findMany({ where: { id: { in: ids.map((r) => Number(r.id)) } } });
    return rows.sort((a, b) => a.lane - b.lane || a.runAt.getTime() - b.runAt.getTime() || a.id - b.id);
  }

  /** Releases locks held by processes that died: their messages become queued again. */
  async sweepExpiredLocks(now: Date): Promise<number> {
    const res = await this.db.outboxMessage.updateMany({
      where: { status: 'delivering', lockedUntil: { lt: now } },
      data: { status: 'queued', lockedBy: null, lockedUntil: null },
    });
    return res.count;
  }

  /** Gives back claimed messages that were never sent (graceful shutdown), uncounting the attempt. */
  async release(ids: number[], workerId: string): Promise<void> {
    if (ids.length === 0) return;
    await this.db.outboxMessage.updateMany({
      where: { id: { in: ids }, lockedBy: workerId, status: 'delivering' },
      data: { status: 'queued', lockedBy: null, lockedUntil: null, attempts: { decrement: 1 } },
    });
  }

  /**
   * Fenced on the claimer: a message whose lock expired and was reclaimed is not overwritten.
   * Two autocommit statements rather than an interactive transaction (a third of the round
   * trips); a crash between them loses only the attempt's log line, never the message state.
   */
  private async finish(id: number, workerId: string, data: Prisma.OutboxMessageUpdateManyMutationInput, attempt: AttemptRecord): Promise<boolean> {
    const res = await this.db.outboxMessage.updateMany({ where: { id, lockedBy: workerId, status: 'delivering' }, data: { ...data, lockedBy: null, lockedUntil: null } });
    if (res.count === 0) return false;
    await this.db.deliveryAttempt.create({ data: { messageId: id, ...attempt } });
    return true;
  }

  markDelivered(msg: OutboxMessage, workerId: string, at: Date, attempt: AttemptRecord, scrub = false): Promise<boolean> {
    return this.finish(
      msg.id,
      workerId,
      {
        status: 'delivered',
        deliveredAt: at,
        latencyMs: Math.max(0, at.getTime() - msg.dueAt.getTime()),
        lastError: null,
        lastStatus: attempt.statusCode,
        // a delivered contact delete keeps no trace of the address it deleted
        ...(scrub ? { email: null, body: '{}' } : {}),
      },
      attempt,
    );
  }

  reschedule(msg: OutboxMessage, workerId: string, runAt: Date, error: string, attempt: AttemptRecord): Promise<boolean> {
    return this.finish(msg.id, workerId, { status: 'queued', runAt, lastError: error, lastStatus: attempt.statusCode }, attempt);
  }

  markDead(msg: OutboxMessage, workerId: string, error: string, attempt: AttemptRecord, scrub = false): Promise<boolean> {
    return this.finish(msg.id, workerId, { status: 'dead', lastError: error, lastStatus: attempt.statusCode, ...(scrub ? { email: null, body: '{}' } : {}) }, attempt);
  }

  markHeld(msg: OutboxMessage, workerId: string, reason: HeldReason, error: string, attempt: AttemptRecord): Promise<boolean> {
    return this.finish(msg.id, workerId, { status: 'held', heldReason: reason, lastError: error, lastStatus: attempt.statusCode }, attempt);
  }

  /** Holds everything of a shop that has not been sent: queued, and (optionally) claimed by this worker. */
  async holdShop(shopId: string, reason: HeldReason): Promise<number> {
    const res = await this.db.outboxMessage.updateMany({ where: { shopId, status: 'queued' }, data: { status: 'held', heldReason: reason } });
    return res.count;
  }

  /** Resumes held messages of a shop whose reason is resolved. */
  async resumeShop(shopId: string, reasons: HeldReason[], now: Date): Promise<number> {
    const res = await this.db.outboxMessage.updateMany({
      where: { shopId, status: 'held', heldReason: { in: reasons } },
      data: { status: 'queued', heldReason: null, runAt: now },
    });
    return res.count;
  }

  /** Manual retry from the admin page: a dead or held message is queued now, with a fresh give-up clock. */
  async retry(shopId: string, id: number, now: Date): Promise<'queued' | 'not_found' | 'not_retryable'> {
    const res = await this.db.outboxMessage.updateMany({
      where: { id, shopId, status: { in: ['dead', 'held'] } },
      data: { status: 'queued', heldReason: null, runAt: now, dueAt: now, lastError: null },
    });
    if (res.count === 1) return 'queued';
    const exists = await this.db.outboxMessage.count({ where: { id, shopId } });
    return exists ? 'not_retryable' : 'not_found';
  }
}
