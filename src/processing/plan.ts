// What stage 2's handlers answer for the receipts of a unit, and the ports the processor runs them
// through.
import type { SqlTx } from '../db/transaction';
import type { ReceiptOutcome } from '../intake/receipt-store';
import type { DueEntry } from '../outbox/due';
import type { ParsedReceipt } from './forward/forward-receipts';

/** A topic handled beside the forwarded ones (bulk operation finished, scopes changed, product changed). */
export type SideHandler = (r: ParsedReceipt) => Promise<{ outcome: 'accepted' | 'ignored'; reason?: string }>;

/** What a stage for another kind of receipt (storefront pixel batches) plans for a batch. */
export interface StagePlan {
  outcomes: ReceiptOutcome[];
  /** Applies the plan in the batch's transaction. */
  write(tx: SqlTx, now: Date): Promise<void>;
  /** Messages it queued, to index as due in the same transaction. */
  due: DueEntry[];
}

/**
 * Stage 2 for receipts of kind 'pixel': reads what it needs, writes nothing until write(). `signed`:
 * the unit's webhooks, whose emails vouch for storefront visitors' claims (src/processing/storefront/vouch.ts).
 */
export type PixelStage = (items: ParsedReceipt[], signed: ParsedReceipt[]) => Promise<StagePlan>;
