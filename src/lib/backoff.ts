// Failure backoff for background loops. Every loop that can fail waits before it tries again,
// longer after each failure in a row (doubling from `baseMs` up to `maxMs`), with ±`jitter`
// so that processes or shops that failed together do not retry together. Keys keep failures
// apart: one shop's failing lane backs off alone, and its first success forgets its count.
// A loop that waits here always yields to the event loop: nothing can spin in microtasks.

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
  /** Fraction of the delay added or removed at random (0.2: ±20%). */
  jitter: number;
}

/** Per shop: a lane that fails waits 1 s, then 2, 4, ... up to 5 minutes. */
export const SHOP_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 5 * 60_000, jitter: 0.2 };
/**
 * A process-wide loop (stage 2, discovery, sweeps) whose failure is usually the database being
 * away: its waits grow to 30 s, so it is back within half a minute of the database.
 */
export const LOOP_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 30_000, jitter: 0.2 };

/** The wait after `failures` failures in a row (1 = the first). */
export function backoffDelayMs(failures: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exp = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, Math.min(failures - 1, 30)));
  const spread = exp * policy.jitter * (2 * random() - 1);
  return Math.max(0, Math.round(Math.min(policy.maxMs * (1 + policy.jitter), exp + spread)));
}

export class Backoff<K = string> {
  private readonly failing = new Map<K, { failures: number; until: number }>();

  constructor(
    private readonly policy: BackoffPolicy,
    private readonly clock: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {}

  /** Records a failure of `key`; returns how long it must wait (ms). */
  fail(key: K): number {
    const failures = (this.failing.get(key)?.failures ?? 0) + 1;
    const delay = backoffDelayMs(failures, this.policy, this.random);
    this.failing.set(key, { failures, until: this.clock() + delay });
    return delay;
  }

  /** `key` worked: its next failure starts from the base delay again. */
  succeed(key: K): void {
    this.failing.delete(key);
  }

  /** Failures of `key` in a row (0 when it last succeeded). */
  failures(key: K): number {
    return this.failing.get(key)?.failures ?? 0;
  }

  /** When `key` may run again (epoch ms; 0 when it is not backing off). */
  until(key: K): number {
    return this.failing.get(key)?.until ?? 0;
  }
}

/** Resolves after `ms`, through a timer: the event loop turns meanwhile. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
