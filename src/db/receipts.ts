// The two statements of the receipts table whose shape differs by database: stage 1's group
// insert and stage 2's read of the oldest pending receipts per partition (db/sqlite/receipts.ts,
// db/postgres/receipts.ts). The rows and their order are the same on both.
import { rawOf, type Db } from './client';
import * as postgres from './postgres/receipts';
import * as sqlite from './sqlite/receipts';

import type { PendingRow } from './receipt-columns';

export { RECEIPT_COLUMNS, PENDING_COLUMNS, type PendingRow } from './receipt-columns';

/** Inserts rows of RECEIPT_COLUMNS values in one statement, skipping webhook ids already stored; returns the new ids. */
export function insertReceipts(db: Db, rows: unknown[][]): Promise<Array<{ webhookId: string }>> {
  const raw = rawOf(db);
  return raw.provider === 'sqlite' ? sqlite.insertReceipts(raw, rows) : postgres.insertReceipts(raw, rows);
}

/** The oldest pending receipts of the partitions, at most `limit`, in arrival order (each partition through its index). */
export function pendingReceipts(db: Db, partitions: number[], limit: number): Promise<PendingRow[]> {
  const raw = rawOf(db);
  return raw.provider === 'sqlite' ? sqlite.pendingReceipts(raw, partitions, limit) : postgres.pendingReceipts(raw, partitions, limit);
}
