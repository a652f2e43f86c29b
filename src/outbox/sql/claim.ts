// The claim's SQL: what a shop has due by delivery class, and the claim that takes a batch of it
// (marking it delivering and counting the attempt and the send), with the row it returns.
import { perRow, rawDate } from '../../db/raw';
import type { ClassIndex } from '../classes';
import type { ClaimedMessage } from '../message';

const CLAIMED_COLUMNS = [
  'id',
  'shopId',
  'kind',
  'eventName',
  'deliveryClass',
  'email',
  'body',
  'attempts',
  'sends',
  'runAt',
  'dueAt',
  'lockedUntil',
] as const;
export type ClaimedRow = Record<(typeof CLAIMED_COLUMNS)[number], unknown>;
export const CLASSES = [0, 1, 2, 3] as const;

/** The shop's due messages of one class, oldest due first, through the (status, shopId, deliveryClass, runAt, id) index. */
const DUE_OF_CLASS = (shop: string, cls: number, now: string) =>
  `SELECT "id" FROM "OutboxMessage" WHERE "status" = 'queued' AND "shopId" = ${shop} AND "deliveryClass" = ${cls} AND "runAt" <= ${now}`;

// How many messages of each class the shop has due (counted up to a cap: the batch needs no more),
// and whether another shop of its workspace has any due of that class (the workspace's budget is
// shared). Index probes only. Parameters: 1 shop, 2 now, 3 cap, 4 workspace. Per row: on PostgreSQL
// those of concurrent lanes go in one statement.
export const DUE_BY_CLASS = perRow((c, rows) => {
  const own = (k: number) =>
    `(SELECT COUNT(*) FROM (${DUE_OF_CLASS(c(1), k, c(2, 'timestamp'))} LIMIT ${c(3, 'integer')}) AS "x") AS "d${k}"`;
  const others = (k: number) => `(SELECT COUNT(*) FROM "Connection" AS "o" WHERE "o"."workspaceId" = ${c(4)} AND "o"."shopId" <> ${c(1)}
      AND EXISTS (${DUE_OF_CLASS('"o"."shopId"', k, c(2, 'timestamp'))})) AS "o${k}"`;
  return `SELECT ${c(1)} AS "shopId", ${CLASSES.map(own).join(', ')}, ${CLASSES.map(others).join(', ')} ${rows ? `FROM ${rows}` : ''}`;
});

// Claims in one statement, counting the attempt and the send, and returns the rows: up to k0..k3
// due messages of each class, oldest due first within each. Parameters: 1 worker, 2 locked until,
// 3 now, 4 shop, 5..8 how many of each class. Only columns of the (status, shopId, deliveryClass,
// runAt, id) index in each class's WHERE: with one more (the send count) SQLite sorts the whole
// due backlog.
const CLAIM_SET = (worker: string, until: string, now: string) =>
  `"status" = 'delivering', "attempts" = "attempts" + 1, "sends" = "sends" + 1, "lockedBy" = ${worker}, "lockedUntil" = ${until}, "updatedAt" = ${now}`;
// functions, not strings: each use must declare its parameters (SQLite binds them in order)
const CLAIM_DUE = (shop: () => string, now: () => string, limit: (k: number) => string) =>
  CLASSES.map((k) => `SELECT "id" FROM (${DUE_OF_CLASS(shop(), k, now())} ORDER BY "runAt", "id" LIMIT ${limit(k)}) AS "c${k}"`).join(
    ' UNION ALL ',
  );
// One statement for one lane; on PostgreSQL for the lanes claiming at once, a row each
// (Coalescer): each class of each lane's batch is its own ordered, limited subquery, which the
// index serves in order (no sort behind a deep backlog), planned with the table as it is at each
// run, and the outer WHERE checks the status again, so a row another claimer took meanwhile is
// skipped, never taken twice.
export const CLAIM = perRow((c, rows) =>
  rows === null
    ? `
  UPDATE "OutboxMessage" SET ${CLAIM_SET(c(1), c(2, 'timestamp'), c(3, 'timestamp'))}
  WHERE "id" IN (${CLAIM_DUE(
    () => c(4),
    () => c(3, 'timestamp'),
    (k) => c(5 + k, 'integer'),
  )}
  ) RETURNING ${CLAIMED_COLUMNS.map((col) => `"${col}"`).join(', ')}`
    : `
  UPDATE "OutboxMessage" SET ${CLAIM_SET('"c"."worker"', '"c"."until"', '"c"."now"')}
  FROM (
    SELECT "m"."id", ${c(1)} AS "worker", ${c(2, 'timestamp')} AS "until", ${c(3, 'timestamp')} AS "now" FROM ${rows}
    CROSS JOIN LATERAL (${CLAIM_DUE(
      () => c(4),
      () => c(3, 'timestamp'),
      (k) => c(5 + k, 'integer'),
    )}) AS "m"
  ) AS "c"
  WHERE "OutboxMessage"."id" = "c"."id" AND "OutboxMessage"."status" = 'queued'
  RETURNING ${CLAIMED_COLUMNS.map((col) => `"OutboxMessage"."${col}"`).join(', ')}`,
);

/** A row the claim returned, as the worker reads it. */
export function claimedOf(r: ClaimedRow): ClaimedMessage {
  return {
    id: Number(r.id),
    shopId: String(r.shopId),
    kind: String(r.kind),
    eventName: String(r.eventName),
    deliveryClass: Number(r.deliveryClass) as ClassIndex,
    email: r.email === null ? null : String(r.email),
    body: String(r.body),
    attempts: Number(r.attempts),
    sends: Number(r.sends),
    runAt: rawDate(r.runAt)!,
    dueAt: rawDate(r.dueAt)!,
    lockedUntil: rawDate(r.lockedUntil),
  };
}
