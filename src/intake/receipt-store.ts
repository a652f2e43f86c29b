// Raw receipts: stage 1 writes them (one multi-row INSERT per group commit, a prepared raw
// statement on each database, deduplicated on the webhook id), stage 2 reads them in arrival
// order per partition and marks them processed, erasing the raw body. Kept for the dedupe
// window, then deleted.
import { Prisma, type WebhookReceipt } from '@prisma/client';
import { commitsOnDisk, rawOf, type Db, type DbProvider } from '../db/client';
import { inChunks, prepare, rawDate, rawTimestamp, runSqlite } from '../db/raw';
import type { SqlTx } from '../db/transaction';
import { Sql } from '../db/sql';

/** Receipts are spread over this many partitions by shop; one processor works a partition at a time. */
export const PARTITIONS = 16;

export type ReceiptKind = 'webhook' | 'pixel';

export interface NewReceipt {
  webhookId: string;
  shopDomain: string;
  topic: string;
  kind: ReceiptKind;
  body: string;
  apiVersion: string | null;
  triggeredAt: Date | null;
  receivedAt: Date;
}

export type PendingReceipt = Pick<WebhookReceipt, 'id' | 'webhookId' | 'shopDomain' | 'topic' | 'kind' | 'body' | 'apiVersion' | 'triggeredAt' | 'receivedAt'>;

/** What stage 2 concluded about a receipt. */
export interface ReceiptOutcome {
  id: number;
  outcome: 'accepted' | 'ignored' | 'rejected' | 'erased';
  reason: string | null;
  messageCount: number;
  customerId: string | null;
}

/** FNV-1a of the shop domain: the same shop always lands in the same partition. */
export function partitionOf(shopDomain: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < shopDomain.length; i++) {
    h ^= shopDomain.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % PARTITIONS;
}

const COLUMNS = ['webhookId', 'shopDomain', 'topic', 'kind', 'body', 'apiVersion', 'triggeredAt', 'receivedAt', 'partition'] as const;
const QUOTED_COLUMNS = COLUMNS.map((c) => `"${c}"`).join(', ');
const INSERT_HEAD = `INSERT INTO "WebhookReceipt" (${QUOTED_COLUMNS})`;
const INSERT_TAIL = `ON CONFLICT ("webhookId") DO NOTHING RETURNING "webhookId"`;
// PostgreSQL: a multi-row VALUES with one parameter per value, so a raw body goes to the server
// as it is. (An unnest over text arrays, as before, made pg escape every body into an array
// literal and the server parse it back: per 3-KB row, 62 against 28 us of the app's CPU and 107
// against 70 us of the rest (server and round trip); and 30% of the bytes a webhook request
// allocated in the ingest benchmark.) One text per bucket of rows (a power of two, so at most
// 10 statements per connection), padded with rows of NULLs that the WHERE drops; each bucket is
// prepared once per connection.
const PG_TYPES_OF: Record<(typeof COLUMNS)[number], string> = {
  webhookId: 'text', shopDomain: 'text', topic: 'text', kind: 'text', body: 'text', apiVersion: 'text', triggeredAt: 'timestamp', receivedAt: 'timestamp', partition: 'int',
};
/** Rows in the PostgreSQL statement that carries `rows` rows: the next power of two. */
export const pgInsertBucket = (rows: number): number => 2 ** Math.ceil(Math.log2(Math.max(1, rows)));
/** A bucket's text, built once per process: a 512-row one took 0.4 ms, on the group commit's path. */
const pgInsertTexts = new Map<number, string>();
function pgInsertText(bucket: number): string {
  let text = pgInsertTexts.get(bucket);
  if (text === undefined) {
    const row = (r: number) => `(${COLUMNS.map((c, i) => `$${r * COLUMNS.length + i + 1}::${PG_TYPES_OF[c]}`).join(', ')})`;
    text = `${INSERT_HEAD}
  SELECT * FROM (VALUES ${Array.from({ length: bucket }, (_, r) => row(r)).join(', ')}) AS "v" (${QUOTED_COLUMNS})
  WHERE "v"."webhookId" IS NOT NULL
  ${INSERT_TAIL}`;
    pgInsertTexts.set(bucket, text);
  }
  return text;
}

const PENDING_COLUMNS = `"id", "webhookId", "shopDomain", "topic", "kind", "body", "apiVersion", "triggeredAt", "receivedAt"`;
// PostgreSQL, parameters: 1 partitions, 2 limit. Each partition's oldest through the
// (partition, processedAt, id) index, then the oldest of those: a deep backlog is never sorted.
const PG_PENDING = `
  SELECT "r".* FROM unnest($1::int[]) AS "t" ("p"), LATERAL (
    SELECT ${PENDING_COLUMNS} FROM "WebhookReceipt" WHERE "partition" = "t"."p" AND "processedAt" IS NULL ORDER BY "id" LIMIT $2
  ) AS "r" ORDER BY "r"."id" LIMIT $2`;
// SQLite has no LATERAL: the same as a UNION ALL, one text per number of partitions.
const sqlitePending = (partitions: number) => `
  SELECT * FROM (${Array.from({ length: partitions }, () => `SELECT * FROM (SELECT ${PENDING_COLUMNS} FROM "WebhookReceipt" WHERE "partition" = CAST(? AS INTEGER) AND "processedAt" IS NULL ORDER BY "id" LIMIT CAST(? AS INTEGER))`).join(' UNION ALL ')})
  ORDER BY "id" LIMIT CAST(? AS INTEGER)`;

type PendingRow = Omit<PendingReceipt, 'triggeredAt' | 'receivedAt'> & { triggeredAt: unknown; receivedAt: unknown };

export class ReceiptStore {
  private readonly sql: Sql;

  constructor(
    private readonly db: Db,
    readonly provider: DbProvider,
  ) {
    this.sql = new Sql(db, provider);
  }

  /**
   * Stage 1: stores a group of receipts in one statement (atomic: all or none); on disk once
   * durable() resolves. Returns the webhook ids that were new; the others were already stored (a
   * repeat).
   */
  async insert(receipts: NewReceipt[]): Promise<Set<string>> {
    if (receipts.length === 0) return new Set();
    const ts = (d: Date | null) => (d === null ? null : rawTimestamp(this.provider, d));
    const rows = receipts.map((r) => [r.webhookId, r.shopDomain, r.topic, r.kind, r.body, r.apiVersion, ts(r.triggeredAt), ts(r.receivedAt), partitionOf(r.shopDomain)]);
    const raw = rawOf(this.db);
    let inserted: Array<{ webhookId: string }>;
    if (raw.provider === 'sqlite') {
      // a multi-row VALUES statement per group size, prepared once and cached on the connection
      const values = `(${COLUMNS.map(() => '?').join(', ')})`;
      const text = `${INSERT_HEAD} VALUES ${Array.from({ length: rows.length }, () => values).join(', ')} ${INSERT_TAIL}`;
      inserted = await raw.exclusive((conn) => runSqlite<{ webhookId: string }>(conn, `receipts_insert_${rows.length}`, text, rows.flat()));
    } else {
      const bucket = pgInsertBucket(rows.length);
      const padding = new Array<null>((bucket - rows.length) * COLUMNS.length).fill(null);
      const text = pgInsertText(bucket);
      inserted = await prepare<{ webhookId: string }>(raw, `receipts_insert_${bucket}`, () => text).run([...rows.flat(), ...padding]);
    }
    return new Set(inserted.map((r) => r.webhookId));
  }

  /**
   * Resolves once every receipt inserted so far is on disk, so a 200 survives a power loss.
   * PostgreSQL's commit waited for its WAL flush already; SQLite syncs its WAL here, off the
   * event loop, one sync shared by the groups committed meanwhile (RawDb.flush).
   */
  durable(): Promise<void> {
    return commitsOnDisk(this.db);
  }

  /** Stage 2: the oldest pending receipts of some partitions, in arrival order (one prepared statement). */
  async pending(partitions: number[], limit: number): Promise<PendingReceipt[]> {
    if (partitions.length === 0) return [];
    const raw = rawOf(this.db);
    const rows =
      raw.provider === 'sqlite'
        ? await raw.exclusive((conn) =>
            runSqlite<PendingRow>(conn, `receipts_pending_${partitions.length}`, sqlitePending(partitions.length), [...partitions.flatMap((p) => [p, limit]), limit]),
          )
        : await prepare<PendingRow>(raw, 'receipts_pending', () => PG_PENDING).run([partitions, limit]);
    return rows.map((r) => ({
      id: Number(r.id), webhookId: r.webhookId, shopDomain: r.shopDomain, topic: r.topic, kind: r.kind, body: r.body, apiVersion: r.apiVersion,
      triggeredAt: rawDate(r.triggeredAt), receivedAt: rawDate(r.receivedAt)!,
    }));
  }

  /**
   * Marks receipts processed and erases their raw bodies, in the caller's transaction. Returns
   * how many were still pending: fewer than given means another processor got there first.
   */
  async markProcessed(tx: SqlTx, outcomes: ReceiptOutcome[], at: Date): Promise<number> {
    if (outcomes.length === 0) return 0;
    const text = (v: string | null) => Prisma.sql`CAST(${v} AS TEXT)`;
    const values = outcomes.map(
      (o) => Prisma.sql`(CAST(${o.id} AS INTEGER), ${text(o.outcome)}, ${text(o.reason)}, CAST(${o.messageCount} AS INTEGER), ${text(o.customerId)})`,
    );
    return tx.$executeRaw(Prisma.sql`
      WITH "v" ("id", "outcome", "reason", "count", "customerId") AS (VALUES ${Prisma.join(values)})
      UPDATE "WebhookReceipt" SET "processedAt" = ${this.sql.ts(at)}, "body" = NULL, "outcome" = "v"."outcome", "reason" = "v"."reason",
        "messageCount" = "v"."count", "customerId" = "v"."customerId"
      FROM "v" WHERE "WebhookReceipt"."id" = "v"."id" AND "WebhookReceipt"."processedAt" IS NULL`);
  }

  /** Deletes processed receipts past the dedupe window, a chunk at a time; returns how many. */
  async deleteExpired(processedBefore: Date, chunk = 5000): Promise<number> {
    // a day of receipts is many chunks: requests go on between them (SQLite's are synchronous)
    return inChunks(async () => {
      const ids = await this.db.webhookReceipt.findMany({ where: { processedAt: { lt: processedBefore } }, select: { id: true }, take: chunk });
      if (ids.length === 0) return { count: 0, more: false };
      const res = await this.db.webhookReceipt.deleteMany({ where: { id: { in: ids.map((r) => r.id) } } });
      return { count: res.count, more: ids.length === chunk };
    });
  }

  /** Receipts not processed yet, and the age of the oldest: the intake's lag (whole app, or one shop). */
  async lag(now: Date, shopDomain?: string): Promise<{ pending: number; oldestAgeS: number }> {
    // raw SQL: Prisma's aggregate over a DateTime column reads SQLite's epoch-ms values as invalid dates
    const shop = shopDomain ? Prisma.sql`AND "shopDomain" = ${shopDomain}` : Prisma.empty;
    const rows = await this.sql.query<{ n: number | bigint; oldest: unknown }>(Prisma.sql`
      SELECT COUNT(*) AS "n", MIN("receivedAt") AS "oldest" FROM "WebhookReceipt" WHERE "processedAt" IS NULL ${shop}`);
    const oldest = Sql.toDate(rows[0]?.oldest);
    return { pending: Number(rows[0]?.n ?? 0), oldestAgeS: oldest ? Math.max(0, (now.getTime() - oldest.getTime()) / 1000) : 0 };
  }
}
