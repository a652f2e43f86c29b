// The pacer's SQL (pacer.ts): a send's turn taken in one statement, a late turn moved, a request
// counted after it was made, a workspace's row made, its limit set.
import { perRow, type StatementBuilder } from '../../db/raw';
import { USAGE_DECAY, type Usage } from '../classes';

// Parameters: 1 now (µs), 2 now (timestamp), 3 catch-up tolerance (µs), 4 (1000 + guard) × 1000,
// 5 this take's token, 6 workspace, 7 the send's delivery class (-1: not a delivery). A take also
// moves the workspace's usage per class (classes.ts): every count decays, the send's class gains
// one; and it counts itself in the takes of its second, so every process can tell the
// workspace's own requests from another integration's (observe). Per row: on PostgreSQL the takes of concurrent lanes go in one statement, one row per
// workspace (Coalescer). SET expressions all read the row as it was before the update.
const USAGE_COLUMNS = ['usageCritical', 'usageTriggers', 'usageBehaviour', 'usageHistory'] as const;
export const TAKE = perRow((c, rows, d) => {
  // a function, not a string: each use must declare its parameters (SQLite binds them in order)
  const ok = () => `"nextSendUs" <= ${c(1, 'bigint')} AND ("pausedUntil" IS NULL OR "pausedUntil" <= ${c(2, 'timestamp')})`;
  const second = () => `(${c(1, 'bigint')} / 1000000)`;
  const usage = (col: string, k: number) =>
    `"${col}" = CASE WHEN ${ok()} AND ${c(7, 'integer')} >= 0 THEN "${col}" * ${USAGE_DECAY} + CASE WHEN ${c(7, 'integer')} = ${k} THEN 1 ELSE 0 END ELSE "${col}" END`;
  return `
  UPDATE "WorkspacePacer" SET
    "nextSendUs" = CASE WHEN ${ok()}
      THEN ${d.greatest('"nextSendUs"', `${c(1, 'bigint')} - ${c(3, 'bigint')}`)} + ((${c(4, 'bigint')} + "limitPerSec" - 1) / "limitPerSec") ELSE "nextSendUs" END,
    ${USAGE_COLUMNS.map(usage).join(',\n    ')},
    "takesLastSecond" = CASE WHEN NOT (${ok()}) THEN "takesLastSecond" WHEN ${second()} = "takeSecond" + 1 THEN "takesThisSecond" WHEN ${second()} = "takeSecond" THEN "takesLastSecond" ELSE 0 END,
    "takesThisSecond" = CASE WHEN NOT (${ok()}) THEN "takesThisSecond" WHEN ${second()} = "takeSecond" THEN "takesThisSecond" + 1 ELSE 1 END,
    "takeSecond" = CASE WHEN ${ok()} THEN ${second()} ELSE "takeSecond" END,
    "takenBy" = CASE WHEN ${ok()} THEN ${c(5)} ELSE "takenBy" END
  ${rows ? `FROM ${rows}` : ''} WHERE "workspaceId" = ${c(6)}
  RETURNING "workspaceId", "nextSendUs", "limitPerSec", "pausedUntil", "takenBy", "takeSecond", "takesThisSecond", "takesLastSecond", ${USAGE_COLUMNS.map((col) => `"${col}"`).join(', ')}`;
});

// A take answered late is moved to the moment it is really used, when no one has taken a send
// since: parameters 1 now (µs), 2 catch-up tolerance (µs), 3 (1000 + guard) × 1000, 4 workspace,
// 5 the take's token. Per row, as TAKE. No row back for a workspace: someone took the next send
// meanwhile, so this one is lost.
export const REANCHOR = perRow(
  (c, rows, d) => `
  UPDATE "WorkspacePacer" SET
    "nextSendUs" = ${d.greatest('"nextSendUs"', `${c(1, 'bigint')} - ${c(2, 'bigint')} + ((${c(3, 'bigint')} + "limitPerSec" - 1) / "limitPerSec")`)}
  ${rows ? `FROM ${rows}` : ''} WHERE "workspaceId" = ${c(4)} AND "takenBy" = ${c(5)}
  RETURNING "workspaceId"`,
);

// A request counted after it was made: the next send waits one interval after it. Parameters:
// 1 now (µs), 2 (1000 + guard) × 1000, 3 workspace.
export const RECORD: StatementBuilder = (p, d) => `
  UPDATE "WorkspacePacer" SET "nextSendUs" = ${d.greatest('"nextSendUs"', p(1, 'bigint'))} + ((${p(2, 'bigint')} + "limitPerSec" - 1) / "limitPerSec")
  WHERE "workspaceId" = ${p(3)}`;

// A workspace met for the first time: its row with the default limit, unless another process
// made it first (then nothing comes back). Parameters: 1 workspace, 2 limit, 3 now (timestamp).
export const ENSURE: StatementBuilder = (p) => `
  INSERT INTO "WorkspacePacer" ("workspaceId", "limitPerSec", "nextSendUs", "updatedAt")
  VALUES (${p(1)}, ${p(2, 'int')}, 0, ${p(3, 'timestamp')})
  ON CONFLICT ("workspaceId") DO NOTHING RETURNING "limitPerSec"`;

// The limit the service reported. Parameters: 1 limit, 2 now (timestamp), 3 workspace.
export const SET_LIMIT: StatementBuilder = (p) => `
  UPDATE "WorkspacePacer" SET "limitPerSec" = ${p(1, 'int')}, "updatedAt" = ${p(2, 'timestamp')} WHERE "workspaceId" = ${p(3)}`;

export interface TakeRow {
  workspaceId: string;
  nextSendUs: number;
  limitPerSec: number;
  pausedUntil: unknown;
  takenBy: string | null;
  takeSecond: number;
  takesThisSecond: number;
  takesLastSecond: number;
  usageCritical: number;
  usageTriggers: number;
  usageBehaviour: number;
  usageHistory: number;
}

export const usageOf = (row: Partial<Record<(typeof USAGE_COLUMNS)[number], unknown>> | null | undefined): Usage =>
  USAGE_COLUMNS.map((col) => Number(row?.[col] ?? 0)) as Usage;
