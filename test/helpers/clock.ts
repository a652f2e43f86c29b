import type { Db } from '../../src/db/client';

/** A clock that runs with real time plus an offset the test can jump forward. */
export class TestClock {
  offset = 0;
  now = (): Date => new Date(Date.now() + this.offset);
  advance(ms: number): void {
    this.offset += ms;
  }
  /**
   * Jumps to when the next queued message is due, but only while nothing is in flight (so no
   * claim lock expires under a request) and no lane holds its shop (so no lease expires under a
   * lane between its last outcome and its release). Returns false when nothing is waiting.
   */
  async advanceToNextDue(db: Db): Promise<boolean> {
    if ((await db.outboxMessage.count({ where: { status: 'delivering' } })) > 0) return true;
    if ((await db.shopDue.count({ where: { leasedBy: { not: null } } })) > 0) return true;
    const next = await db.outboxMessage.findFirst({ where: { status: 'queued' }, orderBy: { runAt: 'asc' }, select: { runAt: true } });
    if (!next) return false;
    // a shop waiting out its workspace's slow-down (a 429, a pause) is due later than its messages
    const waiting = await db.shopDue.findFirst({
      where: { leasedBy: null, dueAt: { gt: this.now() } },
      orderBy: { dueAt: 'asc' },
      select: { dueAt: true },
    });
    const nowMs = this.now().getTime();
    const due = next.runAt.getTime() > nowMs ? next.runAt.getTime() : waiting?.dueAt ? waiting.dueAt.getTime() : nowMs;
    if (due > nowMs) this.advance(due - nowMs + 5);
    return true;
  }
}

/** The most requests whose timestamps fall in any window of `windowMs` (sliding). */
export function maxInWindow(times: number[], windowMs = 1000): number {
  const t = [...times].sort((a, b) => a - b);
  let max = 0;
  for (let i = 0, j = 0; i < t.length; i++) {
    while (t[i]! - t[j]! >= windowMs) j++;
    max = Math.max(max, i - j + 1);
  }
  return max;
}

/**
 * A clock for the app that runs with real time until held: then it stands still, and moves only
 * when the test moves it, so what the app paces by its clock (rate limits) counts no real time.
 * Released, it catches up with real time (never going back): some of the app's times, such as
 * when a request was written, are read from the real clock and compared with it.
 */
export class HoldableClock {
  private offset = 0;
  private heldAt: number | null = null;
  now = (): Date => new Date(this.heldAt ?? Date.now() + this.offset);
  hold(): void {
    this.heldAt ??= Date.now() + this.offset;
  }
  /** Moves a held clock forward. */
  advance(ms: number): void {
    if (this.heldAt === null) throw new Error('the clock runs: hold it first');
    this.heldAt += ms;
  }
  release(): void {
    if (this.heldAt === null) return;
    this.offset = Math.max(this.offset, this.heldAt - Date.now());
    this.heldAt = null;
  }
}
