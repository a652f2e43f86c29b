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

/** The background loops, as connector_background_failures_total{loop} names them. */
export type LoopName =
  | 'lane'
  | 'worker_pass'
  | 'stage2'
  | 'backfill'
  | 'key_check'
  | 'key_rotation'
  | 'pixel_sweep'
  | 'pixel_retry'
  | 'stock_sweep'
  | 'product_alerts'
  | 'holds_reprobe';

/**
 * How every background loop reports a failure: counted in connector_background_failures_total
 * and logged once per key per interval, with the wait it now sits out (`retryInMs`), so a
 * fault that repeats shows on the metric at once and never floods the log.
 */
export class LoopFailures {
  constructor(
    private readonly logOnce: LogOnce,
    private readonly counter?: { inc(labels: { loop: LoopName }): void },
  ) {}

  /** `key` (default: the loop) keeps one shop's repeated failure apart from another's. */
  report(
    loop: LoopName,
    err: unknown,
    message: string,
    o: { key?: string; fields?: Record<string, unknown>; retryInMs?: number; level?: Level } = {},
  ): void {
    this.counter?.inc({ loop });
    const fields = { ...o.fields, err: err instanceof Error ? err.message : String(err) };
    this.logOnce.log(
      o.level ?? 'error',
      o.key ?? loop,
      o.retryInMs === undefined ? fields : { ...fields, retryInMs: o.retryInMs },
      message,
    );
  }
}
