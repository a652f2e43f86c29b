// One receipt's fault stays that receipt's. A unit that fails is tried again one receipt at a time,
// so one receipt the database refuses (hostile content) cannot hold up the others. A receipt that
// fails alone twice with the same error is recorded as rejected, with that error, and its body
// erased. An error that says the database is away (db/unavailable.ts), or that the lease was lost,
// is no receipt's fault: it goes to the loop, which waits and tries the unit again, and nothing is
// rejected for it.
import { isDatabaseUnavailable } from '../db/unavailable';
import type { PendingReceipt, ReceiptOutcome } from '../intake/receipt-store';
import { LeaseLost } from './partitions';
import { describeError, unitEnd } from './unit';

export interface UnitRunner {
  /** Processes the first unit of `pending` in one transaction; returns how many receipts it took. */
  process(pending: PendingReceipt[], mayRelease: boolean): Promise<number>;
  /** Records the receipt as rejected (its own transaction). */
  reject(receipt: PendingReceipt, outcome: ReceiptOutcome): Promise<void>;
  /** The processor is stopping: the receipts not tried yet are left pending. */
  stopping(): boolean;
}

/**
 * Processes the first unit of `pending`, or, when it fails for its content, each of its receipts
 * alone; returns how many receipts it took. `mayRelease`: the unit may give the lease up as it
 * commits (the turn's last).
 */
export async function processSafely(runner: UnitRunner, pending: PendingReceipt[], mayRelease: boolean): Promise<number> {
  try {
    return await runner.process(pending, mayRelease);
  } catch (err) {
    if (err instanceof LeaseLost || isDatabaseUnavailable(err)) throw err;
    // a unit of one already was that receipt alone: its failure is the first of its tries
    if (pending.length === 1) {
      await processAlone(runner, pending[0]!, (err as Error).message);
      return 1;
    }
  }
  const end = unitEnd(pending);
  for (let i = 0; i < end; i++) {
    if (runner.stopping()) return i;
    await processAlone(runner, pending[i]!);
  }
  return end;
}

async function processAlone(runner: UnitRunner, receipt: PendingReceipt, firstError: string | null = null): Promise<void> {
  let error: string | null = firstError;
  for (let tries = firstError === null ? 0 : 1; tries < 2; tries++) {
    try {
      await runner.process([receipt], false);
      return;
    } catch (err) {
      // the database away is not this receipt's fault: the loop waits it out, nothing is rejected
      if (err instanceof LeaseLost || isDatabaseUnavailable(err)) throw err;
      const message = (err as Error).message;
      if (error !== null && error !== message) throw err;
      error = message;
    }
  }
  await runner.reject(receipt, {
    id: receipt.id,
    outcome: 'rejected',
    reason: `could not be processed: ${describeError(error!)}`,
    messageCount: 0,
    customerId: null,
  });
}
