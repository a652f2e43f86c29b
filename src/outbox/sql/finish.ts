// The finish's SQL: a claimed message's outcome, fenced on its claimer, and its attempt row,
// written together, with the parameters in the order the statements number them.
import type { DbProvider } from '../../db/client';
import { perRow, rawTimestamp, type Param, type StatementBuilder } from '../../db/raw';
import type { AttemptRecord, ClaimedMessage, HeldReason, MessageStatus } from '../message';

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
// Both in one statement, for the lanes recording at once (paired-write.ts)
export const FINISH_COMBINED = perRow(
  (c, rows) => `
  WITH "done" AS (UPDATE "OutboxMessage" SET ${FINISH_SET(c)} FROM ${rows} WHERE ${FINISH_WHERE(c)} RETURNING "OutboxMessage"."id")
  INSERT INTO "DeliveryAttempt" (${ATTEMPT_COLUMNS}) SELECT ${ATTEMPT_VALUES(c)} FROM "done" JOIN ${rows} ON ${c(11, 'integer')} = "done"."id"
  RETURNING "messageId"`,
);
export const FINISH_UPDATE: StatementBuilder = (p) => `UPDATE "OutboxMessage" SET ${FINISH_SET(p)} WHERE ${FINISH_WHERE(p)}`;
export const ATTEMPT_INSERT: StatementBuilder = (p) => `INSERT INTO "DeliveryAttempt" (${ATTEMPT_COLUMNS}) VALUES (${ATTEMPT_VALUES(p)})`;

export interface FinishFields {
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

/** The parameters of the finish statements (1..20 above). */
export function finishParams(
  provider: DbProvider,
  msg: ClaimedMessage,
  workerId: string,
  f: FinishFields,
  attempt: AttemptRecord,
  now: Date,
): unknown[] {
  const ts = (d: Date | null | undefined) => (d ? rawTimestamp(provider, d) : null);
  return [
    f.status,
    ts(f.deliveredAt),
    f.latencyMs ?? null,
    ts(f.runAt),
    f.heldReason ?? null,
    f.lastError,
    f.lastStatus,
    f.giveBackSend ? 1 : 0,
    f.scrub ? 1 : 0,
    ts(now),
    msg.id,
    workerId,
    msg.id,
    attempt.attempt,
    ts(attempt.startedAt),
    attempt.durationMs,
    attempt.statusCode,
    attempt.outcome,
    attempt.error,
    attempt.workerId ?? null,
  ];
}
