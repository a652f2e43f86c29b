// When stage 2's steps let the event loop turn: once the work since the last turn has taken the
// budget, not before. Time is jest's fake clock (performance.now and setImmediate both), so the
// budget is crossed exactly where the test says, whatever this machine's speed.
import { LOOP_BUDGET_MS, LoopBudget } from '../../../src/processing/loop-budget';

describe('LoopBudget', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** Whether step() let the loop turn: it stays pending until the fake setImmediate runs. */
  async function turned(budget: LoopBudget): Promise<boolean> {
    let done = false;
    const step = budget.step().then(() => (done = true));
    // the microtasks of a step that does not yield
    for (let i = 0; i < 5; i++) await Promise.resolve();
    if (done) return false;
    jest.runOnlyPendingTimers();
    await step;
    return true;
  }

  it('goes on without a turn until the work since the last turn has taken the budget', async () => {
    const budget = new LoopBudget();
    expect(await turned(budget)).toBe(false);
    jest.advanceTimersByTime(LOOP_BUDGET_MS - 1);
    expect(await turned(budget)).toBe(false);
    jest.advanceTimersByTime(1);
    expect(await turned(budget)).toBe(true);
    // the budget starts again at the turn
    jest.advanceTimersByTime(LOOP_BUDGET_MS - 1);
    expect(await turned(budget)).toBe(false);
    jest.advanceTimersByTime(1);
    expect(await turned(budget)).toBe(true);
  });

  it('turns at every step once each step takes longer than the budget', async () => {
    const budget = new LoopBudget();
    const turns: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      jest.advanceTimersByTime(LOOP_BUDGET_MS + 5);
      turns.push(await turned(budget));
    }
    expect(turns).toEqual([true, true, true, true]);
  });
});
