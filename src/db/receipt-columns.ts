// The receipts table's columns as the dialect-specific statements read and write them.

/** The columns of an inserted receipt, in the order of a row's values. */
export const RECEIPT_COLUMNS = [
  'webhookId',
  'shopDomain',
  'topic',
  'kind',
  'body',
  'apiVersion',
  'triggeredAt',
  'receivedAt',
  'partition',
] as const;
export const QUOTED_RECEIPT_COLUMNS = RECEIPT_COLUMNS.map((c) => `"${c}"`).join(', ');
export const INSERT_HEAD = `INSERT INTO "WebhookReceipt" (${QUOTED_RECEIPT_COLUMNS})`;
export const INSERT_TAIL = `ON CONFLICT ("webhookId") DO NOTHING RETURNING "webhookId"`;

/** The columns stage 2 reads of a pending receipt. */
export const PENDING_COLUMNS = [
  'id',
  'webhookId',
  'shopDomain',
  'topic',
  'kind',
  'body',
  'apiVersion',
  'triggeredAt',
  'receivedAt',
] as const;
export const QUOTED_PENDING_COLUMNS = PENDING_COLUMNS.map((c) => `"${c}"`).join(', ');
export type PendingRow = Record<(typeof PENDING_COLUMNS)[number], unknown>;
