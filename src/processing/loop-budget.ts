// Stage 2's synchronous work in steps. On SQLite every statement resolves at once, so a batch's
// parsing, mapping and writing would otherwise run as one task however large its payloads (an
// order of 10,000 line items would hold the event loop through its whole parse, mapping and
// write). Between steps the loop turns once the steps since its last turn took longer than the
// budget, so requests, timers and socket reads wait at most about one step.
import { turnOfTheLoop } from '../db/raw';

/** Work this long without a turn of the event loop is enough (a few small receipts' worth). */
export const LOOP_BUDGET_MS = 20;

export class LoopBudget {
  private since = performance.now();

  constructor(private readonly budgetMs = LOOP_BUDGET_MS) {}

  /** Called between steps: lets the event loop turn when the budget is spent. */
  async step(): Promise<void> {
    if (performance.now() - this.since < this.budgetMs) return;
    await turnOfTheLoop();
    this.since = performance.now();
  }
}
