// A log line per key per interval, not per occurrence: a failure that repeats for one shop (an
// unreadable key, a lane that keeps failing) is logged when it starts and then once per interval,
// with how many times it happened since, so a fault can never fill the disk with log lines.
import type { Logger } from './logger';

type Level = 'warn' | 'error' | 'info';

export class LogOnce {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs = 5 * 60_000,
    private readonly clock: () => number = Date.now,
    /** Keys remembered at most; the oldest are forgotten first. */
    private readonly maxKeys = 10_000,
  ) {}

  /** Logs unless `key` was logged within the interval; returns whether it logged. */
  log(level: Level, key: string, fields: Record<string, unknown>, message: string): boolean {
    const now = this.clock();
    const seen = this.last.get(key);
    if (seen && now - seen.at < this.intervalMs) {
      seen.suppressed += 1;
      return false;
    }
    if (!seen && this.last.size >= this.maxKeys) this.last.delete(this.last.keys().next().value as string);
    this.last.delete(key);
    this.last.set(key, { at: now, suppressed: 0 });
    this.logger[level]({ ...fields, ...(seen?.suppressed ? { repeated: seen.suppressed } : {}) }, message);
    return true;
  }

  /** The fault behind `key` is over: its next occurrence is logged at once. */
  clear(key: string): void {
    this.last.delete(key);
  }
}
