// The outbox: durable messages with explicit states, and their attempts in a separate table
// (Svix's message / message-attempt split). Claims take due messages in one statement that
// also counts the attempt and the send; completion is fenced on the claimer's id, so a message
// reclaimed after a lock expiry is never overwritten by a late finisher.
//
// A message the service may have accepted is never sent again because our own bookkeeping
// failed: every send is counted at claim, given back only when the service answered with a
// refusal, and capped (maxSends). A send whose success could not be recorded is marked
// delivered_unconfirmed rather than released for another send (see worker.ts).
import { Prisma } from '@prisma/client';
import { commitsOnDisk, rawOf, type Db, type DbProvider } from '../db/client';
import { Coalescer, perRowCall } from '../db/group-commit';
import { compileSqlite, execCompiled, perRow, prepare, rawDate, rawTimestamp, runRows, type Param, type RawStatement, type StatementBuilder } from '../db/raw';
import { sendCapReason } from './retry-policy';
import { Sql } from './sql';

export type MessageStatus = 'queued' | 'delivering' | 'delivered' | 'delivered_unconfirmed' | 'held' | 'dead' | 'cancelled' | 'skipped';
/**
 * Why a message waits: `invalid_key` (the service refused the key), `disconnected`, `uninstalled`,
 * or `service_not_found` (the service's address answered 404: a configuration problem, lifted by
 * the re-probe in holds.ts, at process start, or by a manual retry).
 */
export type HeldReason = 'invalid_key' | 'disconnected' | 'uninstalled' | 'service_not_found';

/** Default cap on sends per message that may have reached the service (MAX_SENDS_PER_MESSAGE). */
export const DEFAULT_MAX_SENDS = 8;

export interface AttemptRecord {
  attempt: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  outcome: string;
  error: string | null;
  workerId?: string;
}

export interface OutboxOptions {
  maxSends?: number;
}

/** What the worker needs of a claimed message. */
export interface ClaimedMessage {
  id: number;
  shopId: string;
  kind: string;
  lane: number;
  email: string | null;
  body: string;
  attempts: number;
  sends: number;
  runAt: Date;
  dueAt: Date;
  lockedUntil: Date | null;
}

const CLAIMED_COLUMNS = ['id', 'shopId', 'kind', 'lane', 'email', 'body', 'attempts', 'sends', 'runAt', 'dueAt', 'lockedUntil'] as const;
type ClaimedRow = Record<(typeof CLAIMED_COLUMNS)[number], unknown>;

// Claims in one statement, counting the attempt and the send, and returns the rows. Parameters:
// 1 worker, 2 locked until, 3 now, 4 shop, 5 limit. Only columns of the (status, shopId, lane,
// runAt, id) index in the WHERE: one more (the send count) made SQLite sort the whole due
// backlog; `lane IN (0, 1)` lets it seek both lanes in index order. SQLite; PostgreSQL: CLAIM_PG.
const CLAIM_SET = (worker: string, until: string, now: string) =>
  `"status" = 'delivering', "attempts" = "attempts" + 1, "sends" = "sends" + 1, "lockedBy" = ${worker}, "lockedUntil" = ${until}, "updatedAt" = ${now}`;
const CLAIM_DUE = (shop: string, now: string, limit: string) => `
    SELECT "id" FROM "OutboxMessage"
    WHERE "status" = 'queued' AND "shopId" = ${shop} AND "lane" IN (0, 1) AND "runAt" <= ${now}
    ORDER BY "lane", "runAt", "id" LIMIT ${limit}`;
const CLAIM: StatementBuilder = (p) => `
  UPDATE "OutboxMessage" SET ${CLAIM_SET(p(1), p(2, 'timestamp'), p(3, 'timestamp'))}
  WHERE "id" IN (${CLAIM_DUE(p(4), p(3, 'timestamp'), p(5, 'integer'))}
  ) RETURNING ${CLAIMED_COLUMNS.map((c) => `"${c}"`).join(', ')}`;

// PostgreSQL: the claims of concurrent lanes in one statement, a row each (Coalescer), with the
// parameters of CLAIM. Each lane's batch is its own ordered, limited subquery, which the index
// serves in order (no sort behind a deep backlog); planned with the table as it is at each run.
const CLAIM_PG = perRow(
  (c, rows) => `
  UPDATE "OutboxMessage" SET ${CLAIM_SET('"c"."worker"', '"c"."until"', '"c"."now"')}
  FROM (
    SELECT "m"."id", ${c(1)} AS "worker", ${c(2, 'timestamp')} AS "until", ${c(3, 'timestamp')} AS "now" FROM ${rows}
    CROSS JOIN LATERAL (${CLAIM_DUE(c(4), c(3, 'timestamp'), c(5, 'integer'))} FOR UPDATE SKIP LOCKED) AS "m"
  ) AS "c"
  WHERE "OutboxMessage"."id" = "c"."id"
  RETURNING ${CLAIMED_COLUMNS.map((col) => `"OutboxMessage"."${col}"`).join(', ')}`,
);

// Records an outcome, fenced on the claimer, and its attempt, in one statement (PostgreSQL) or one
// transaction (SQLite). Parameters: 1 status, 2 delivered at, 3 latency, 4 run at, 5 held reason,
// 6 last error, 7 last status, 8 sends to give back, 9 scrub (1/0), 10 now, 11 id, 12 worker.
const FINISH_SET = (p: Param) => `
  "status" = ${p(1)}, "deliveredAt" = COALESCE(${p(2, 'timestamp')}, "deliveredAt"), "latencyMs" = COALESCE(${p(3, 'bigint')}, "latencyMs"),
  "runAt" = COALESCE(${p(4, 'timestamp')}, "runAt"), "heldReason" = COALESCE(${p(5)}, "heldReason"), "lastError" = ${p(6)},
  "lastStatus" = ${p(7, 'integer')}, "sends" = "sends" - ${p(8, 'integer')},
  "email" = CASE WHEN ${p(9, 'integer')} = 1 THEN NULL ELSE "email" END, "body" = CASE WHEN ${p(9, 'integer')} = 1 THEN '{}' ELSE "body" END,
  "lockedBy" = NULL, "lockedUntil" = NULL, "updatedAt" = ${p(10, 'timestamp')}`;
const FINISH_WHERE = (p: Param) => `"OutboxMessage"."id" = ${p(11, 'integer')} AND "lockedBy" = ${p(12)} AND "status" = 'delivering'`;
// attempt columns, parameters 13..20
const ATTEMPT_COLUMNS = '"messageId", "attempt", "startedAt", "durationMs", "statusCode", "outcome", "error", "workerId"';
const ATTEMPT_VALUES = (p: Param) =>
  `${p(13, 'integer')}, ${p(14, 'integer')}, ${p(15, 'timestamp')}, ${p(16, 'integer')}, ${p(17, 'integer')}, ${p(18)}, ${p(19)}, ${p(20)}`;
// PostgreSQL: the outcomes of concurrent lanes in one statement, a row each (Coalescer)
const FINISH_PG = perRow(
  (c, rows) => `
  WITH "done" AS (UPDATE "OutboxMessage" SET ${FINISH_SET(c)} FROM ${rows} WHERE ${FINISH_WHERE(c)} RETURNING "OutboxMessage"."id")
  INSERT INTO "DeliveryAttempt" (${ATTEMPT_COLUMNS}) SELECT ${ATTEMPT_VALUES(c)} FROM "done" JOIN ${rows} ON ${c(11, 'integer')} = "done"."id"
  RETURNING "messageId"`,
);
const FINISH_UPDATE_SQLITE = compileSqlite((p) => `UPDATE "OutboxMessage" SET ${FINISH_SET(p)} WHERE ${FINISH_WHERE(p)}`);
const ATTEMPT_INSERT_SQLITE = compileSqlite((p) => `INSERT INTO "DeliveryAttempt" (${ATTEMPT_COLUMNS}) VALUES (${ATTEMPT_VALUES(p)})`);

interface FinishFields {
  status: MessageStatus;
  deliveredAt?: Date;
  latencyMs?: number;
  runAt?: Date;
  heldReason?: HeldReason;
  lastError: string | null;
  lastStatus: number | null;
  /** 1 when the service answered with a refusal (this send did not reach it as an accepted event). */
  giveBackSend?: boolean;
  scrub?: boolean;
}

/** A claimed message back on the queue, for the caller to wake its shop. */
export interface Requeued {
  shopId: string;
  runAt: Date;
}

export class OutboxRepository {
  private readonly sql: Sql;
  readonly maxSends: number;
  private readonly claimStatement: RawStatement<ClaimedRow>;
  /** A lane's claim: on PostgreSQL those of concurrent lanes share one statement. */
  private readonly claimOne: (params: unknown[]) => Promise<ClaimedRow[]>;
  private readonly finishStatement: RawStatement<{ messageId: number }>;
  /** PostgreSQL: the outcomes of concurrent lanes, recorded together (one round trip under load). */
  private readonly finishes?: Coalescer<unknown[], boolean>;

  constructor(
    readonly db: Db,
    readonly provider: DbProvider,
    opts: OutboxOptions = {},
  ) {
    this.sql = new Sql(db, provider);
    this.maxSends = opts.maxSends ?? DEFAULT_MAX_SENDS;
    // planned with its parameters each time: a generic plan made while the shop's queue was
    // small took 100 ms per claim behind 100,000 queued messages (deep-backlog fault test)
    this.claimStatement = prepare(rawOf(db), 'outbox_claim', provider === 'postgres' ? CLAIM_PG : CLAIM, { replan: true });
    this.finishStatement = prepare(rawOf(db), 'outbox_finish', FINISH_PG);
    this.claimOne = perRowCall(provider, {
      key: (params) => String(params[3]),
      run: async (rows) => {
        const claimed = await runRows(this.claimStatement, provider, rows);
        return rows.map((params) => claimed.filter((r) => r.shopId === params[3]));
      },
    });
    if (provider === 'postgres') {
      this.finishes = new Coalescer({
        key: (params) => String(params[10]),
        run: async (rows) => {
          const hit = new Set((await runRows(this.finishStatement, provider, rows)).map((r) => Number(r.messageId)));
          return rows.map((params) => hit.has(params[10] as number));
        },
      });
    }
  }

  private ts(d: Date | null | undefined): number | string | null {
    return d ? rawTimestamp(this.provider, d) : null;
  }

  /**
   * Claims up to `limit` due messages of one shop, live lane first, marking them delivering and
   * counting the attempt and the send. A message past the send cap is never sent: it is dead.
   */
  async claim(shopId: string, workerId: string, limit: number, now: Date, lockMs: number): Promise<ClaimedMessage[]> {
    const until = new Date(now.getTime() + lockMs);
    const rows = await this.claimOne([workerId, this.ts(until), this.ts(now), shopId, limit]);
    const messages = rows.map((r) => ({
      id: Number(r.id), shopId: String(r.shopId), kind: String(r.kind), lane: Number(r.lane), email: r.email === null ? null : String(r.email),
      body: String(r.body), attempts: Number(r.attempts), sends: Number(r.sends), runAt: rawDate(r.runAt)!, dueAt: rawDate(r.dueAt)!, lockedUntil: rawDate(r.lockedUntil),
    }));
    // every transition to queued already enforces the cap; this is the last guard before a send
    const over = messages.filter((m) => m.sends > this.maxSends);
    for (const m of over) {
      await this.db.outboxMessage.updateMany({
        where: { id: m.id, lockedBy: workerId, status: 'delivering' },
        data: { status: 'dead', lockedBy: null, lockedUntil: null, sends: { decrement: 1 }, lastError: sendCapReason(m.sends - 1, 'the send cap was reached') },
      });
    }
    return messages.filter((m) => m.sends <= this.maxSends).sort((a, b) => a.lane - b.lane || a.runAt.getTime() - b.runAt.getTime() || a.id - b.id);
  }

  /**
   * Releases locks held by processes that stopped: their messages become queued again, or dead
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
          ? { status: 'dead', lockedBy: null, lockedUntil: null, lastError: sendCapReason(m.sends, 'the process sending it stopped before recording an outcome') }
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
    const params = [
      f.status, this.ts(f.deliveredAt), f.latencyMs ?? null, this.ts(f.runAt), f.heldReason ?? null, f.lastError, f.lastStatus,
      f.giveBackSend ? 1 : 0, f.scrub ? 1 : 0, this.ts(now), msg.id, workerId,
      msg.id, attempt.attempt, this.ts(attempt.startedAt), attempt.durationMs, attempt.statusCode, attempt.outcome, attempt.error, attempt.workerId ?? null,
    ];
    // the attempt row is inserted only when the fenced update hit
    const raw = rawOf(this.db);
    if (raw.provider === 'postgres') return this.finishes!.call(params);
    const changed = await raw.exclusive((conn) =>
      conn.transaction(() => {
        const hit = execCompiled(conn, 'outbox_finish', FINISH_UPDATE_SQLITE, params).changes === 1;
        if (hit) execCompiled(conn, 'attempt_insert', ATTEMPT_INSERT_SQLITE, params);
        return hit;
      })(),
    );
    // "delivered" on disk, as PostgreSQL's commit is, so a power loss cannot take it back and send
    // the message again. Other outcomes wait for the next checkpoint's sync: losing one leaves the
    // message claimed, and once its lock expires it is sent again to a service that did not accept
    // it (at worst one more refusal, and one attempt fewer in the log). A failed sync changes
    // nothing recorded (the commit stands; the next checkpoint syncs)
    if (f.status === 'delivered') await raw.flush().catch(() => undefined);
    return changed;
  }

  markDelivered(msg: ClaimedMessage, workerId: string, at: Date, attempt: AttemptRecord, scrub = false): Promise<boolean> {
    // a delivered contact delete keeps no trace of the address it deleted
    return this.finish(msg, workerId, { status: 'delivered', deliveredAt: at, latencyMs: Math.max(0, at.getTime() - msg.dueAt.getTime()), lastError: null, lastStatus: attempt.statusCode, scrub }, attempt, at);
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
  reschedule(msg: ClaimedMessage, workerId: string, runAt: Date, error: string, attempt: AttemptRecord, refused: boolean, now: Date): Promise<boolean> {
    return this.finish(msg, workerId, { status: 'queued', runAt, lastError: error, lastStatus: attempt.statusCode, giveBackSend: refused }, attempt, now);
  }

  markDead(msg: ClaimedMessage, workerId: string, error: string, attempt: AttemptRecord, now: Date, scrub = false): Promise<boolean> {
    return this.finish(msg, workerId, { status: 'dead', lastError: error, lastStatus: attempt.statusCode, scrub }, attempt, now);
  }

  markHeld(msg: ClaimedMessage, workerId: string, reason: HeldReason, error: string, attempt: AttemptRecord, now: Date): Promise<boolean> {
    return this.finish(msg, workerId, { status: 'held', heldReason: reason, lastError: error, lastStatus: attempt.statusCode, giveBackSend: true }, attempt, now);
  }

  /** Holds everything of a shop that has not been sent; `now` dates the hold (holds.ts compares deliveries with it). */
  async holdShop(shopId: string, reason: HeldReason, now?: Date): Promise<number> {
    const res = await this.db.outboxMessage.updateMany({ where: { shopId, status: 'queued' }, data: { status: 'held', heldReason: reason, ...(now ? { updatedAt: now } : {}) } });
    return res.count;
  }

  /** Whether any message of the shop is held for this reason. */
  async isHeld(shopId: string, reason: HeldReason): Promise<boolean> {
    return (await this.db.outboxMessage.findFirst({ where: { shopId, status: 'held', heldReason: reason }, select: { id: true } })) !== null;
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
   * Manual retry from the admin page: a dead, held or unconfirmed message is queued now, with a
   * fresh give-up clock and send count (the merchant decided to send it again).
   */
  async retry(shopId: string, id: number, now: Date): Promise<'queued' | 'not_found' | 'not_retryable'> {
    const res = await this.db.outboxMessage.updateMany({
      where: { id, shopId, status: { in: ['dead', 'held', 'delivered_unconfirmed'] } },
      data: { status: 'queued', heldReason: null, runAt: now, dueAt: now, lastError: null, sends: 0 },
    });
    if (res.count === 1) return 'queued';
    const exists = await this.db.outboxMessage.count({ where: { id, shopId } });
    return exists ? 'not_retryable' : 'not_found';
  }
}
