// Per-team limits of the emulated service: the 1-second sliding-window rate limit and the
// temporary block after repeated bad requests. Timestamps are milliseconds (Date.now()).

/** Timestamps inside a trailing window, oldest first, pruned lazily. */
export class SlidingWindow {
  private times: number[] = [];
  private head = 0;

  constructor(private readonly windowMs: number) {}

  count(now: number): number {
    const from = now - this.windowMs;
    while (this.head < this.times.length && (this.times[this.head] as number) <= from) this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
    return this.times.length - this.head;
  }

  add(now: number): void {
    this.times.push(now);
  }

  /** Milliseconds until the oldest entry leaves the window (0 when empty). */
  msUntilSlot(now: number): number {
    this.count(now);
    const oldest = this.times[this.head];
    return oldest === undefined ? 0 : Math.max(0, oldest + this.windowMs - now);
  }

  clear(): void {
    this.times = [];
    this.head = 0;
  }
}

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  retryAfterSec?: number;
}

/** "count of accepted requests in the last 1000 ms >= limit" means 429. */
export function takeSlot(window: SlidingWindow, limit: number, now: number): RateDecision {
  const used = window.count(now);
  if (used >= limit) {
    return { allowed: false, limit, remaining: 0, retryAfterSec: Math.max(1, Math.ceil(window.msUntilSlot(now) / 1000)) };
  }
  window.add(now);
  return { allowed: true, limit, remaining: Math.max(0, limit - used - 1) };
}

export function peekRemaining(window: SlidingWindow, limit: number, now: number): number {
  return Math.max(0, limit - window.count(now));
}

/** Counts 400s per team; `threshold` of them within `windowMs` blocks the team for `blockMs`. */
export class BadRequestGuard {
  private readonly recent: SlidingWindow;
  blockedUntil = 0;

  constructor(
    private readonly threshold: number,
    windowMs: number,
    private readonly blockMs: number,
  ) {
    this.recent = new SlidingWindow(windowMs);
  }

  isBlocked(now: number): boolean {
    return now < this.blockedUntil;
  }

  recordBadRequest(now: number): void {
    this.recent.add(now);
    if (this.threshold > 0 && this.recent.count(now) >= this.threshold) {
      this.blockedUntil = now + this.blockMs;
      this.recent.clear();
    }
  }

  clear(): void {
    this.recent.clear();
    this.blockedUntil = 0;
  }
}
