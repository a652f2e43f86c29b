// PostgreSQL's receipts statements (db/receipts.ts).
import type { RawDb } from '../client';
import {
  INSERT_HEAD,
  INSERT_TAIL,
  QUOTED_PENDING_COLUMNS,
  QUOTED_RECEIPT_COLUMNS,
  RECEIPT_COLUMNS,
  type PendingRow,
} from '../receipt-columns';
import { prepare } from '../raw';

type PostgresRaw = Extract<RawDb, { provider: 'postgres' }>;

// A multi-row VALUES with one parameter per value, so a raw body goes to the server as it is (an
// unnest over text arrays would have pg escape every body into an array literal and the server
// parse it back). One text per bucket of rows (a power of two, so at most 10 statements per
// connection), padded with rows of NULLs that the WHERE drops; each bucket is prepared once per
// connection.
const TYPES: Record<(typeof RECEIPT_COLUMNS)[number], string> = {
  webhookId: 'text',
  shopDomain: 'text',
  topic: 'text',
  kind: 'text',
  body: 'text',
  apiVersion: 'text',
  triggeredAt: 'timestamp',
  receivedAt: 'timestamp',
  partition: 'int',
};
/** Rows in the statement that carries `rows` rows: the next power of two. */
export const insertBucket = (rows: number): number => 2 ** Math.ceil(Math.log2(Math.max(1, rows)));
/** A bucket's text, built once per process: the group commit's path never builds one again. */
const insertTexts = new Map<number, string>();
function insertText(bucket: number): string {
  let text = insertTexts.get(bucket);
  if (text === undefined) {
    const row = (r: number) => `(${RECEIPT_COLUMNS.map((c, i) => `$${r * RECEIPT_COLUMNS.length + i + 1}::${TYPES[c]}`).join(', ')})`;
    text = `${INSERT_HEAD}
  SELECT * FROM (VALUES ${Array.from({ length: bucket }, (_, r) => row(r)).join(', ')}) AS "v" (${QUOTED_RECEIPT_COLUMNS})
  WHERE "v"."webhookId" IS NOT NULL
  ${INSERT_TAIL}`;
    insertTexts.set(bucket, text);
  }
  return text;
}

export function insertReceipts(raw: PostgresRaw, rows: unknown[][]): Promise<Array<{ webhookId: string }>> {
  const bucket = insertBucket(rows.length);
  const padding = new Array<null>((bucket - rows.length) * RECEIPT_COLUMNS.length).fill(null);
  const text = insertText(bucket);
  return prepare<{ webhookId: string }>(raw, `receipts_insert_${bucket}`, () => text).run([...rows.flat(), ...padding]);
}

// Parameters: 1 partitions, 2 limit. Each partition's oldest through the (partition, processedAt,
// id) index, then the oldest of those: a deep backlog is never sorted.
const PENDING = `
  SELECT "r".* FROM unnest($1::int[]) AS "t" ("p"), LATERAL (
    SELECT ${QUOTED_PENDING_COLUMNS} FROM "WebhookReceipt" WHERE "partition" = "t"."p" AND "processedAt" IS NULL ORDER BY "id" LIMIT $2
  ) AS "r" ORDER BY "r"."id" LIMIT $2`;

export function pendingReceipts(raw: PostgresRaw, partitions: number[], limit: number): Promise<PendingRow[]> {
  return prepare<PendingRow>(raw, 'receipts_pending', () => PENDING).run([partitions, limit]);
}
