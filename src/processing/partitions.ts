// Receipt partitions and their leases (the ReceiptLease rows): receipts are spread over PARTITIONS
// by shop, and a process works only the partitions it leased, so one shop's receipts are processed
// by one process at a time, in order. A lease is taken for a turn, renewed by every unit's commit
// inside its transaction (the fence: a unit whose lease was lost writes nothing), and given up at
// the end of the turn.
import { Prisma } from '@prisma/client';
import { rawOf, type Db, type DbProvider } from '../db/client';
import { prepare, rawTimestamp, type RawStatement, type StatementBuilder } from '../db/raw';
import { Sql } from '../db/sql';
import type { SqlTx } from '../db/transaction';
import { PARTITIONS } from '../intake/receipt-store';

/** How long a partition's lease lasts unless a unit's commit renews it. */
export const DEFAULT_LEASE_MS = 15_000;

/** The unit's partitions are no longer this process's (or its receipts were processed elsewhere): it wrote nothing. */
export class LeaseLost extends Error {}

// Leases up to n partitions with pending receipts that are free, ours already, or expired,
// oldest pending receipt first (index probes only), so no partition waits behind busier
// ones. The outer condition is checked again on the row it locks: two processes never share
// a partition. On PostgreSQL a partition another process is leasing at this moment is skipped,
// not waited for: two processors woken by one NOTIFY lease half of the partitions each (one that
// waited for the other's rows would find them taken, lease nothing and go back to sleep while the
// other worked through both halves). Parameters: 1 processor, 2 until, 3 now, 4 n.
const LEASE_PENDING: StatementBuilder = (p, d) => {
  const free = (t: string) => `(${t}"owner" IS NULL OR ${t}"owner" = ${p(1)} OR ${t}"leasedUntil" < ${p(3, 'timestamp')})`;
  const pending = `"r"."partition" = "l"."partition" AND "r"."processedAt" IS NULL`;
  return `
  UPDATE "ReceiptLease" SET "owner" = ${p(1)}, "leasedUntil" = ${p(2, 'timestamp')}
  WHERE ${free('')} AND "partition" IN (
    SELECT "l"."partition" FROM "ReceiptLease" AS "l"
    WHERE ${free('"l".')} AND EXISTS (SELECT 1 FROM "WebhookReceipt" AS "r" WHERE ${pending})
    ORDER BY (SELECT MIN("r"."id") FROM "WebhookReceipt" AS "r" WHERE ${pending}) LIMIT ${p(4, 'integer')} ${d.skipLocked('"l"')})
  RETURNING "partition"`;
};

export interface PartitionsOptions {
  db: Db;
  provider: DbProvider;
  /** The process's id, written as the owner of the partitions it leases. */
  owner: string;
  now: () => Date;
  /** A partition's lease, renewed by every unit (DEFAULT_LEASE_MS). */
  leaseMs?: number;
  /** Partitions leased at once (default half of them). */
  perTurn?: number;
}

export class ReceiptPartitions {
  private readonly sql: Sql;
  private readonly leaseStatement: RawStatement<{ partition: number }>;
  private readonly leaseMs: number;
  private readonly perTurn: number;
  private seeded = false;

  constructor(private readonly o: PartitionsOptions) {
    this.sql = new Sql(o.db, o.provider);
    this.leaseStatement = prepare(rawOf(o.db), 'receipt_lease', LEASE_PENDING, { lazyCommit: true });
    this.leaseMs = o.leaseMs ?? DEFAULT_LEASE_MS;
    this.perTurn = o.perTurn ?? PARTITIONS / 2;
  }

  /** One lease row per partition, written once per process (a row that exists is left as it is). */
  async seed(): Promise<void> {
    if (this.seeded) return;
    const values = Array.from({ length: PARTITIONS }, (_, p) => Prisma.sql`(${this.sql.int(p)})`);
    await this.o.db.$executeRaw(
      Prisma.sql`INSERT INTO "ReceiptLease" ("partition") VALUES ${Prisma.join(values)} ON CONFLICT ("partition") DO NOTHING`,
    );
    this.seeded = true;
  }

  /** Leases the partitions of the oldest pending receipts that no one else holds. */
  async lease(): Promise<number[]> {
    const now = this.o.now();
    const until = new Date(now.getTime() + this.leaseMs);
    const rows = await this.leaseStatement.run([
      this.o.owner,
      rawTimestamp(this.o.provider, until),
      rawTimestamp(this.o.provider, now),
      this.perTurn,
    ]);
    return rows.map((r) => Number(r.partition)).sort((a, b) => a - b);
  }

  /** The end of a turn: the partitions are free for any process. */
  async giveUp(partitions: number[]): Promise<void> {
    await this.o.db.receiptLease.updateMany({
      where: { partition: { in: partitions }, owner: this.o.owner },
      data: { owner: null, leasedUntil: null },
    });
  }

  /**
   * In a unit's transaction: renews the lease on its partitions, or gives it up (`release`: the
   * turn's last unit), and throws LeaseLost when any of them is no longer this process's.
   */
  async renew(tx: SqlTx, partitions: number[], now: Date, release: boolean): Promise<void> {
    const until = release ? null : this.sql.ts(new Date(now.getTime() + this.leaseMs));
    const owner = release ? null : this.o.owner;
    const renewed = await tx.$executeRaw(Prisma.sql`
        UPDATE "ReceiptLease" SET "owner" = ${owner}, "leasedUntil" = ${until}
        WHERE "partition" IN (${Prisma.join(partitions.map((p) => this.sql.int(p)))}) AND "owner" = ${this.o.owner}`);
    if (renewed !== partitions.length) throw new LeaseLost(`lost the lease on receipt partitions ${partitions.join(', ')}`);
  }
}

/** Partitions leased for one turn; `released`: the turn's last unit gave them up as it committed. */
export interface Turn {
  partitions: number[];
  released: boolean;
}
