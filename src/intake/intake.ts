// Stage 1: a webhook (or a storefront pixel batch) is acknowledged by one durable write. The
// raw receipt joins the current group commit; the caller answers only after that commit, so a
// 200 always means stored. Nothing is parsed or mapped here (stage 2 does that).
import { GroupCommitter } from '../db/group-commit';
import type { NewReceipt, ReceiptStore } from './receipt-store';

export type IntakeOutcome = 'accepted' | 'duplicate';

export interface IntakeDeps {
  receipts: ReceiptStore;
  /** After each commit: wake the stage-2 processors (here and in worker processes). */
  onStored: () => void;
  /** Most receipts per write. */
  maxGroup?: number;
}

export interface Intake {
  /** Resolves after the receipt is committed; rejects when the write failed (the caller answers 5xx). */
  accept(receipt: NewReceipt): Promise<IntakeOutcome>;
  /** Writes and items so far: items / writes is the group size. */
  stats(): { writes: number; items: number };
}

export function createIntake(deps: IntakeDeps): Intake {
  const committer = new GroupCommitter<NewReceipt, IntakeOutcome>({
    maxItems: deps.maxGroup ?? 500,
    async write(items) {
      const fresh = await deps.receipts.insert(items);
      // two deliveries of one webhook in the same group: one row; the first is the new one
      const seen = new Set<string>();
      return items.map((r) => (fresh.has(r.webhookId) && !seen.has(r.webhookId) && seen.add(r.webhookId) ? 'accepted' : 'duplicate'));
    },
    // the commit on disk (SQLite syncs its WAL apart from the commit) before anyone is answered
    // or woken; the next group's insert goes on meanwhile and shares the sync after this one
    async afterWrite() {
      await deps.receipts.durable();
      deps.onStored();
    },
  });
  return {
    accept: (receipt) => committer.submit(receipt),
    stats: () => ({ writes: committer.writes, items: committer.items }),
  };
}
