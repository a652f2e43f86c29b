// SQLite's receipts statements (db/receipts.ts), run on the app's one connection under its lock.
import type { RawDb } from '../client';
import { INSERT_HEAD, INSERT_TAIL, QUOTED_PENDING_COLUMNS, RECEIPT_COLUMNS, type PendingRow } from '../receipt-columns';
import { runSqlite } from '../raw';

type SqliteRaw = Extract<RawDb, { provider: 'sqlite' }>;

/** A multi-row VALUES statement per group size, prepared once and cached on the connection. */
export function insertReceipts(raw: SqliteRaw, rows: unknown[][]): Promise<Array<{ webhookId: string }>> {
  const values = `(${RECEIPT_COLUMNS.map(() => '?').join(', ')})`;
  const text = `${INSERT_HEAD} VALUES ${Array.from({ length: rows.length }, () => values).join(', ')} ${INSERT_TAIL}`;
  return raw.exclusive((conn) => runSqlite<{ webhookId: string }>(conn, `receipts_insert_${rows.length}`, text, rows.flat()));
}

// No LATERAL: each partition's oldest as a UNION ALL, one text per number of partitions, then the
// oldest of those.
const pendingText = (partitions: number) => `
  SELECT * FROM (${Array.from({ length: partitions }, () => `SELECT * FROM (SELECT ${QUOTED_PENDING_COLUMNS} FROM "WebhookReceipt" WHERE "partition" = CAST(? AS INTEGER) AND "processedAt" IS NULL ORDER BY "id" LIMIT CAST(? AS INTEGER))`).join(' UNION ALL ')})
  ORDER BY "id" LIMIT CAST(? AS INTEGER)`;

export function pendingReceipts(raw: SqliteRaw, partitions: number[], limit: number): Promise<PendingRow[]> {
  return raw.exclusive((conn) =>
    runSqlite<PendingRow>(conn, `receipts_pending_${partitions.length}`, pendingText(partitions.length), [
      ...partitions.flatMap((p) => [p, limit]),
      limit,
    ]),
  );
}
