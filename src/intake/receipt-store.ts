// Raw receipts: stage 1 writes them (one multi-row INSERT per group commit, a prepared raw
// statement on each database, deduplicated on the webhook id), stage 2 reads them in arrival
// order per partition and marks them processed, erasing the raw body. Kept for the dedupe
// window, then deleted.
import { Prisma, type WebhookReceipt } from '@prisma/client';
import { commitsOnDisk, type Db, type DbProvider } from '../db/client';
import { inChunks, rawDate, rawTimestamp } from '../db/raw';
import { insertReceipts, pendingReceipts } from '../db/receipts';
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

export type PendingReceipt = Pick<
  WebhookReceipt,
  'id' | 'webhookId' | 'shopDomain' | 'topic' | 'kind' | 'body' | 'apiVersion' | 'triggeredAt' | 'receivedAt'
>;

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
    const rows = receipts.map((r) => [
      r.webhookId,
      r.shopDomain,
      r.topic,
      r.kind,
      r.body,
      r.apiVersion,
      ts(r.triggeredAt),
      ts(r.receivedAt),
      partitionOf(r.shopDomain),
    ]);
    const inserted = await insertReceipts(this.db, rows);
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
    const rows = await pendingReceipts(this.db, partitions, limit);
    return rows.map((r) => ({
      id: Number(r.id),
      webhookId: String(r.webhookId),
      shopDomain: String(r.shopDomain),
      topic: String(r.topic),
      kind: String(r.kind),
      body: r.body === null ? null : String(r.body),
      apiVersion: r.apiVersion === null ? null : String(r.apiVersion),
      triggeredAt: rawDate(r.triggeredAt),
      receivedAt: rawDate(r.receivedAt)!,
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
      (o) =>
        Prisma.sql`(CAST(${o.id} AS INTEGER), ${text(o.outcome)}, ${text(o.reason)}, CAST(${o.messageCount} AS INTEGER), ${text(o.customerId)})`,
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
      const ids = await this.db.webhookReceipt.findMany({
        where: { processedAt: { lt: processedBefore } },
        select: { id: true },
        take: chunk,
      });
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
    const oldest = rawDate(rows[0]?.oldest);
    return { pending: Number(rows[0]?.n ?? 0), oldestAgeS: oldest ? Math.max(0, (now.getTime() - oldest.getTime()) / 1000) : 0 };
  }
}
