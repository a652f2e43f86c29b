// In-memory token buckets (per process): `rate` requests a second on average, bursts up to
// `burst`. Each key costs one number: the time at which its bucket is full again (GCRA, the
// "theoretical arrival time"), which takes the place of a token count and its last refill.
//
// Keys live in two generations, each `burst / rate` seconds long, the time an empty bucket takes
// to fill. A key written in one generation is full again before the next one ends, so the older
// generation is dropped whole at each turn, and dropping it loses no limit. A flood of distinct
// keys (one per storefront visitor) costs a map insertion each, and nothing is ever scanned. When
// the newer generation holds maxKeys / 2 keys, it turns early: that only ever makes the limit
// more lenient, for the keys of the generation it drops.
export interface TokenBucketsOptions {
  rate: number;
  burst: number;
  maxKeys?: number;
  /** Milliseconds, monotonic. */
  nowMs?: () => number;
}

export class TokenBuckets {
  private current = new Map<string, number>();
  private previous = new Map<string, number>();
  private turnedAt: number;
  /** Milliseconds a token takes to come back, and an empty bucket to fill. */
  private readonly interval: number;
  private readonly fill: number;
  private readonly generationKeys: number;
  private readonly nowMs: () => number;

  constructor(opts: TokenBucketsOptions) {
    this.interval = 1000 / opts.rate;
    this.fill = Math.max(1, opts.burst) * this.interval;
    this.generationKeys = Math.max(1, Math.floor((opts.maxKeys ?? 100_000) / 2));
    this.nowMs = opts.nowMs ?? (() => performance.now());
    this.turnedAt = this.nowMs();
  }

  /** Takes `n` tokens for `key` (all or none); false when its bucket holds fewer (over the limit). */
  take(key: string, n = 1): boolean {
    const now = this.nowMs();
    if (now - this.turnedAt >= this.fill) this.turn(now);
    const full = this.current.get(key) ?? this.previous.get(key);
    const next = (full === undefined || full < now ? now : full) + this.interval * n;
    // (a float's rounding must not cost the last token of a burst)
    if (next - now > this.fill + 1e-6) return false;
    if (this.current.size >= this.generationKeys && !this.current.has(key)) this.turn(now);
    this.current.set(key, next);
    return true;
  }

  /** Keys held, in both generations (a key in both counts twice). */
  get size(): number {
    return this.current.size + this.previous.size;
  }

  private turn(now: number): void {
    // two generations past: every bucket is full again
    this.previous = now - this.turnedAt >= 2 * this.fill ? new Map() : this.current;
    this.current = new Map();
    this.turnedAt = now;
  }
}
