// A unit's commit: its plans written, the messages they queued indexed as due, and its receipts
// marked processed, in one transaction fenced on the partitions' lease. A crash that loses this
// commit leaves the receipts pending, to be processed again the same way, and nothing outside the
// database acts on it first: its messages are sent only after a claim, whose durable commit
// flushes this one (db/transaction.ts). Nothing is doubled: messages are unique by source id, and
// receipts are marked only while still pending.
import type { Prisma } from '@prisma/client';
import type { Db, DbProvider } from '../db/client';
import { driverTransaction, type SqlTx } from '../db/transaction';
import type { PendingReceipt, ReceiptOutcome, ReceiptStore } from '../intake/receipt-store';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { lowerDue, type DueEntry } from '../outbox/due';
import { LeaseLost, type ReceiptPartitions } from './partitions';
import type { UnitPlan } from './plan';

export interface CommitDeps {
  db: Db;
  provider: DbProvider;
  logger: Logger;
  metrics: Metrics;
  receipts: ReceiptStore;
  partitions: ReceiptPartitions;
  now: () => Date;
  /** After a commit that queued messages: wake the delivery workers (the due index is written already). */
  onDue: (entries: DueEntry[]) => void;
}

export class UnitCommit {
  constructor(private readonly deps: CommitDeps) {}

  /**
   * Writes the unit's plans on `partitions`, in order, and marks its receipts; `release`: the
   * turn's last unit gives the lease up in the same transaction. Throws LeaseLost, having written
   * nothing, when the partitions or the receipts are no longer this process's.
   */
  async unit(partitions: number[], plans: UnitPlan[], release: boolean): Promise<void> {
    const { db, provider, receipts } = this.deps;
    const now = this.deps.now();
    const fenced = async (tx: SqlTx, prisma: Prisma.TransactionClient | null) => {
      await this.deps.partitions.renew(tx, partitions, now, release);
      for (const plan of plans) {
        if (plan.transaction === 'prisma') await plan.write(prisma!, now);
        else await plan.write(tx, now);
        await lowerDue(tx, provider, plan.due);
      }
      const outcomes = plans.flatMap((p) => p.outcomes);
      const marked = await receipts.markProcessed(tx, outcomes, now);
      // fewer than given: another processor did them meanwhile; give this unit up, nothing written
      if (marked !== outcomes.length) throw new LeaseLost(`receipts of partitions ${partitions.join(', ')} were processed elsewhere`);
    };
    if (plans.some((p) => p.transaction === 'prisma')) await db.$transaction((tx) => fenced(tx, tx));
    else await driverTransaction(db, (tx) => fenced(tx, null), { lazyCommit: true });
    for (const plan of plans) await plan.committed?.();
    this.count(plans.flatMap((p) => [...p.outcomes, ...(p.erased ?? [])]));
    const due = plans.flatMap((p) => p.due);
    if (due.length) this.deps.onDue(due);
  }

  /** A receipt that could not be processed, recorded as rejected with why (isolate.ts). */
  async rejected(receipt: PendingReceipt, outcome: ReceiptOutcome): Promise<void> {
    await this.deps.db.$transaction((tx) => this.deps.receipts.markProcessed(tx, [outcome], this.deps.now()));
    this.deps.logger.error(
      { receiptId: receipt.id, topic: receipt.topic, err: outcome.reason },
      'a receipt could not be processed and was recorded as rejected',
    );
    this.count([outcome]);
  }

  private count(outcomes: ReceiptOutcome[]): void {
    for (const o of outcomes) this.deps.metrics.receiptsProcessed.inc({ outcome: o.outcome });
  }
}
