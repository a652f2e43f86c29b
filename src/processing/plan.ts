// What every stage-2 handler answers for its receipts of a unit: one plan type, whoever the
// handler (forwarded topics, storefront batches, privacy and lifecycle topics, side effects).
// A handler reads what it needs and decides; the commit (commit.ts) then writes every plan of the
// unit, indexes the messages they queued as due and marks the receipts processed, in one
// transaction fenced on the partitions' lease; once it committed, the delivery workers are woken.
import type { Prisma } from '@prisma/client';
import type { SqlTx } from '../db/transaction';
import type { ReceiptOutcome } from '../intake/receipt-store';
import type { DueEntry } from '../outbox/due';
import type { ParsedReceipt } from './unit';

interface PlanBase {
  /**
   * What became of each receipt: marked processed in the unit's transaction (its body erased),
   * and counted. The write may still fill in a reason; they are read after it.
   */
  outcomes: ReceiptOutcome[];
  /** Receipts the write deletes (shop/redact erases the shop's receipts, its own too): counted, never marked. */
  erased?: ReceiptOutcome[];
  /** The messages the plan queues, indexed as due in the same transaction (read after the write). */
  due: DueEntry[];
  /** Runs once the transaction committed: what must not run inside it (a redaction's compaction, VACUUM). */
  committed?(): Promise<void>;
}

/** A plan written with raw statements on the driver's transaction (db/transaction.ts): stage 2's hot path. */
export interface DriverPlan extends PlanBase {
  transaction?: 'driver';
  /** Writes the plan in the unit's transaction, before its receipts are marked. */
  write(tx: SqlTx, now: Date): Promise<void>;
}

/**
 * A plan whose write reads and writes through Prisma's models (the privacy and lifecycle topics,
 * each a unit alone): its unit's transaction is one of Prisma's.
 */
export interface PrismaPlan extends PlanBase {
  transaction: 'prisma';
  /** Reads, decides and writes in the unit's transaction, before its receipts are marked. */
  write(tx: Prisma.TransactionClient, now: Date): Promise<void>;
}

export type UnitPlan = DriverPlan | PrismaPlan;

/** The plan of receipts that change nothing in the unit's transaction: only what became of them is recorded. */
export function outcomePlan(
  receipts: ReadonlyArray<{ id: number }>,
  outcome: ReceiptOutcome['outcome'],
  reason: string | null = null,
): UnitPlan {
  return {
    outcomes: receipts.map((r) => ({ id: r.id, outcome, reason, messageCount: 0, customerId: null })),
    due: [],
    write: async () => undefined,
  };
}

/**
 * A topic handled beside the forwarded ones (bulk operation finished, scopes changed, product
 * changed): it acts when called, through the stores of what it updates, and answers the
 * receipt's outcome (src/processing/side/).
 */
export type SideHandler = (r: ParsedReceipt) => Promise<UnitPlan>;

/**
 * Stage 2 for receipts of kind 'pixel': reads what it needs, writes nothing until write(). `signed`:
 * the unit's webhooks, whose emails vouch for storefront visitors' pending identities (src/processing/storefront/vouch.ts).
 */
export type StorefrontStage = (items: ParsedReceipt[], signed: ParsedReceipt[]) => Promise<UnitPlan>;
