// The outbox: durable messages with explicit states, and their attempts in a separate table
// (Svix's message / message-attempt split). Claims take due messages in one statement that
// also counts the attempt and the send; completion is fenced on the claimer's id, so a message
// reclaimed after a lock expiry is never overwritten by a late finisher.
//
// A message the service may have accepted is never sent again because our own bookkeeping
// failed: every send is counted at claim, given back only when the service answered with a
// refusal, and capped (maxSends). A send whose success could not be recorded is marked
// delivered_unconfirmed rather than released for another send (see delivery/completer.ts).
// The statements live in sql/ (claim, finish, expire), the message types in message.ts.
import { commitsOnDisk, rawOf, type Db, type DbProvider } from '../db/client';
import { perRowCall } from '../db/group-commit';
import { pairedWrite } from '../db/paired-write';
import { prepare, rawTimestamp, runRows, type RawStatement } from '../db/raw';
import type { ClassIndex } from './classes';
import type { AttemptRecord, ClaimedMessage, HeldReason, Requeued } from './message';
import { sendCapReason } from './retry-policy';
import { CLAIM, claimedOf, CLASSES, DUE_BY_CLASS, type ClaimedRow } from './sql/claim';
import { EXPIRE_STALE } from './sql/expire';
import { ATTEMPT_INSERT, FINISH_COMBINED, FINISH_UPDATE, finishParams, type FinishFields } from './sql/finish';
import { Sql } from '../db/sql';

/** Default cap on sends per message that may have reached the service. */
export const DEFAULT_MAX_SENDS = 8;

export interface OutboxOptions {
  maxSends?: number;
}

export class OutboxRepository {
  private readonly sql: Sql;
  readonly maxSends: number;
  private readonly claimStatement: RawStatement<ClaimedRow>;
  /** A lane's claim: on PostgreSQL those of concurrent lanes share one statement. */
  private readonly claimOne: (params: unknown[]) => Promise<ClaimedRow[]>;
  private readonly dueStatement: RawStatement<Record<string, unknown>>;
  /** A lane's look at what is due: on PostgreSQL those of concurrent lanes share one statement. */
  private readonly dueOne: (params: unknown[]) => Promise<Record<string, unknown> | undefined>;
  /** An outcome and its attempt, atomically; on PostgreSQL those of concurrent lanes recorded together. */
  private readonly finishOne: (params: unknown[]) => Promise<boolean>;

  constructor(
    readonly db: Db,
    readonly provider: DbProvider,
    opts: OutboxOptions = {},
  ) {
    this.sql = new Sql(db, provider);
    this.maxSends = opts.maxSends ?? DEFAULT_MAX_SENDS;
    // planned with its parameters each time: a generic plan made while a shop's queue was small
    // reads the whole backlog later (test/faults/deep-backlog.test.ts)
    this.claimStatement = prepare(rawOf(db), 'outbox_claim', CLAIM, { replan: true });
    this.finishOne = pairedWrite(db, 'outbox_finish', {
      first: FINISH_UPDATE,
      second: ATTEMPT_INSERT,
      combined: FINISH_COMBINED,
      hit: 'messageId',
      key: (params) => String(params[10]),
    });
    this.dueStatement = prepare(rawOf(db), 'outbox_due_by_class', DUE_BY_CLASS);
    this.dueOne = perRowCall(provider, {
      key: (params) => String(params[0]),
      run: async (rows) => {
        const found = await runRows(this.dueStatement, provider, rows);
        return rows.map((params) => found.find((r) => r.shopId === params[0]));
      },
    });
    this.claimOne = perRowCall(provider, {
      key: (params) => String(params[3]),
      run: async (rows) => {
        const claimed = await runRows(this.claimStatement, provider, rows);
        return rows.map((params) => claimed.filter((r) => r.shopId === params[3]));
      },
    });
  }

  private ts(d: Date | null | undefined): number | string | null {
    return d ? rawTimestamp(this.provider, d) : null;
  }

  /**
   * How many messages of each class the shop has due, counted up to `cap`, and whether another
   * shop of the workspace has any due of that class: what the lane plans its next batch from.
   */
  async dueByClass(shopId: string, workspaceId: string, now: Date, cap: number): Promise<{ own: number[]; others: boolean[] }> {
    const row = await this.dueOne([shopId, this.ts(now), cap, workspaceId]);
    return {
      own: CLASSES.map((k) => Number(row?.[`d${k}`] ?? 0)),
      others: CLASSES.map((k) => Number(row?.[`o${k}`] ?? 0) > 0),
    };
  }

  /**
   * Claims up to `counts[k]` due messages of class k of one shop, oldest due first within each,
   * marking them delivering and counting the attempt and the send. A message past the send cap
   * is never sent: it is dead.
   */
  async claim(shopId: string, workerId: string, counts: readonly number[], now: Date, lockMs: number): Promise<ClaimedMessage[]> {
    const until = new Date(now.getTime() + lockMs);
    const rows = await this.claimOne([workerId, this.ts(until), this.ts(now), shopId, ...CLASSES.map((k) => Math.max(0, counts[k] ?? 0))]);
    const messages = rows.map(claimedOf);
    // every transition to queued already enforces the cap; this is the last guard before a send
    const over = messages.filter((m) => m.sends > this.maxSends);
    for (const m of over) {
      await this.db.outboxMessage.updateMany({
        where: { id: m.id, lockedBy: workerId, status: 'delivering' },
        data: {
          status: 'dead',
          lockedBy: null,
          lockedUntil: null,
          sends: { decrement: 1 },
          lastError: sendCapReason(m.sends - 1, 'the send cap was reached'),
        },
      });
    }
    return messages
      .filter((m) => m.sends <= this.maxSends)
      .sort((a, b) => a.deliveryClass - b.deliveryClass || a.runAt.getTime() - b.runAt.getTime() || a.id - b.id);
  }

  /** Claimed messages past their class's useful age: expired, never sent (the claim's attempt and send given back). */
  async expireClaimed(ids: number[], workerId: string, reason: string, now: Date): Promise<number> {
    if (ids.length === 0) return 0;
    const res = await this.db.outboxMessage.updateMany({
      where: { id: { in: ids }, lockedBy: workerId, status: 'delivering' },
      data: {
        status: 'expired',
        lastError: reason,
        lockedBy: null,
        lockedUntil: null,
        attempts: { decrement: 1 },
        sends: { decrement: 1 },
        updatedAt: now,
      },
    });
    return res.count;
  }

  /**
   * Every due message of the shop's class `cls` that became due before `cutoff`: expired, never
   * sent. Returns how many of each event. Run when a claim met one, so a stale backlog goes at once.
   */
  async expireStale(shopId: string, cls: ClassIndex, cutoff: Date, now: Date, reason: string): Promise<Map<string, number>> {
    const rows = await this.sql.query<{ eventName: string }>(EXPIRE_STALE(this.sql, shopId, cls, cutoff, now, reason));
    const byEvent = new Map<string, number>();
    for (const r of rows) byEvent.set(r.eventName, (byEvent.get(r.eventName) ?? 0) + 1);
    return byEvent;
  }

  /**
   * Releases the locks of processes that stopped: their messages become queued again, or dead
   * when they reached the send cap (each such lock is a send whose outcome nobody recorded).
   * Locks of `ownIds` (this process's messages still in hand) are left alone.
   */
  async sweepExpiredLocks(now: Date, ownIds: number[] = []): Promise<Requeued[]> {
    const expired = await this.db.outboxMessage.findMany({
      where: { status: 'delivering', lockedUntil: { lt: now }, ...(ownIds.length ? { id: { notIn: ownIds } } : {}) },
      select: { id: true, shopId: true, runAt: true, sends: true, lockedBy: true },
      take: 1000,
    });
    const requeued: Requeued[] = [];
    for (const m of expired) {
      const capped = m.sends >= this.maxSends;
      const res = await this.db.outboxMessage.updateMany({
        where: { id: m.id, status: 'delivering', lockedBy: m.lockedBy },
        data: capped
          ? {
              status: 'dead',
              lockedBy: null,
              lockedUntil: null,
              lastError: sendCapReason(m.sends, 'the process sending it stopped before recording an outcome'),
            }
          : { status: 'queued', lockedBy: null, lockedUntil: null },
      });
      if (res.count && !capped) requeued.push({ shopId: m.shopId, runAt: m.runAt });
    }
    return requeued;
  }

  /** Gives back claimed messages that were never sent (graceful shutdown, a pause), uncounting the attempt and the send. */
  async release(ids: number[], workerId: string): Promise<void> {
    if (ids.length === 0) return;
    await this.db.outboxMessage.updateMany({
      where: { id: { in: ids }, lockedBy: workerId, status: 'delivering' },
      data: { status: 'queued', lockedBy: null, lockedUntil: null, attempts: { decrement: 1 }, sends: { decrement: 1 } },
    });
  }

  /**
   * Records an outcome and its attempt, fenced on the claimer: a message whose lock expired and
   * was reclaimed is not overwritten by a late finisher. One round trip, atomic.
   */
  private async finish(msg: ClaimedMessage, workerId: string, f: FinishFields, attempt: AttemptRecord, now: Date): Promise<boolean> {
    const params = finishParams(this.provider, msg, workerId, f, attempt, now);
    // the attempt row is inserted only when the fenced update hit
    const changed = await this.finishOne(params);
    // "delivered" on disk, so a power loss cannot take it back and send the message again (SQLite
    // syncs its WAL for it; PostgreSQL's commit was durable). Other outcomes wait for the next
    // checkpoint's sync: losing one leaves the message claimed, and once its lock expires it is
    // sent again to a service that did not accept it (at worst one more refusal, and one attempt
    // fewer in the log). A failed sync changes nothing recorded (the commit stands).
    if (f.status === 'delivered') await commitsOnDisk(this.db).catch(() => undefined);
    return changed;
  }

  markDelivered(msg: ClaimedMessage, workerId: string, at: Date, attempt: AttemptRecord, scrub = false): Promise<boolean> {
    // a delivered contact delete keeps no trace of the address it deleted
    return this.finish(
      msg,
      workerId,
      {
        status: 'delivered',
        deliveredAt: at,
        latencyMs: Math.max(0, at.getTime() - msg.dueAt.getTime()),
        lastError: null,
        lastStatus: attempt.statusCode,
        scrub,
      },
      attempt,
      at,
    );
  }

  /**
   * The service accepted the message but recording that failed: the smallest write that takes it
   * out of the queue for good, so it is never sent again. Shown in the delivery log and metrics.
   */
  async markUnconfirmed(msg: ClaimedMessage, workerId: string, at: Date, error: string, scrub = false): Promise<boolean> {
    const res = await this.db.outboxMessage.updateMany({
      where: { id: msg.id, lockedBy: workerId, status: 'delivering' },
      data: {
        status: 'delivered_unconfirmed',
        deliveredAt: at,
        lastError: `The service accepted this message, but recording the delivery failed: ${error}`.slice(0, 1000),
        lockedBy: null,
        lockedUntil: null,
        ...(scrub ? { email: null, body: '{}' } : {}),
      },
    });
    // accepted by the service: on disk before the lane goes on, as "delivered" is (finish)
    await commitsOnDisk(this.db).catch(() => undefined);
    return res.count === 1;
  }

  /** `refused`: the service answered, so this send did not reach it as an accepted event; it does not count against the cap. */
  reschedule(
    msg: ClaimedMessage,
    workerId: string,
    runAt: Date,
    error: string,
    attempt: AttemptRecord,
    refused: boolean,
    now: Date,
  ): Promise<boolean> {
    return this.finish(
      msg,
      workerId,
      { status: 'queued', runAt, lastError: error, lastStatus: attempt.statusCode, giveBackSend: refused },
      attempt,
      now,
    );
  }

  markDead(msg: ClaimedMessage, workerId: string, error: string, attempt: AttemptRecord, now: Date, scrub = false): Promise<boolean> {
    return this.finish(msg, workerId, { status: 'dead', lastError: error, lastStatus: attempt.statusCode, scrub }, attempt, now);
  }

  markHeld(msg: ClaimedMessage, workerId: string, reason: HeldReason, error: string, attempt: AttemptRecord, now: Date): Promise<boolean> {
    return this.finish(
      msg,
      workerId,
      { status: 'held', heldReason: reason, lastError: error, lastStatus: attempt.statusCode, giveBackSend: true },
      attempt,
      now,
    );
  }

  /** Holds everything of a shop that has not been sent; `now` dates the hold (holds.ts compares deliveries with it). */
  async holdShop(shopId: string, reason: HeldReason, now?: Date): Promise<number> {
    const res = await this.db.outboxMessage.updateMany({
      where: { shopId, status: 'queued' },
      data: { status: 'held', heldReason: reason, ...(now ? { updatedAt: now } : {}) },
    });
    return res.count;
  }

  /** Whether any message of the shop is held for this reason. */
  async isHeld(shopId: string, reason: HeldReason): Promise<boolean> {
    return (
      (await this.db.outboxMessage.findFirst({ where: { shopId, status: 'held', heldReason: reason }, select: { id: true } })) !== null
    );
  }

  /** Resumes held messages of a shop whose reason is resolved. */
  async resumeShop(shopId: string, reasons: HeldReason[], now: Date): Promise<number> {
    const res = await this.db.outboxMessage.updateMany({
      where: { shopId, status: 'held', heldReason: { in: reasons } },
      data: { status: 'queued', heldReason: null, runAt: now },
    });
    return res.count;
  }

  /**
   * Manual retry from the admin page: a dead, held, expired or unconfirmed message is queued now, with a
   * fresh give-up clock and send count (the merchant decided to send it again).
   */
  async retry(shopId: string, id: number, now: Date): Promise<'queued' | 'not_found' | 'not_retryable'> {
    const res = await this.db.outboxMessage.updateMany({
      where: { id, shopId, status: { in: ['dead', 'held', 'delivered_unconfirmed', 'expired'] } },
      data: { status: 'queued', heldReason: null, runAt: now, dueAt: now, lastError: null, sends: 0 },
    });
    if (res.count === 1) return 'queued';
    const exists = await this.db.outboxMessage.count({ where: { id, shopId } });
    return exists ? 'not_retryable' : 'not_found';
  }
}
