// In-memory token buckets (per process): `rate` requests a second on average, bursts up to
// `burst`. The map is bounded: at its limit, buckets that have refilled (idle keys) go first,
// then the oldest half, so a flood of distinct keys costs bounded memory and only ever makes
// the limit more lenient for the keys it evicts.
export interface TokenBucketsOptions {
  rate: number;
  burst: number;
  maxKeys?: number;
  /** Milliseconds, monotonic. */
  nowMs?: () => number;
}

export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly maxKeys: number;
  private readonly nowMs: () => number;

  constructor(private readonly opts: TokenBucketsOptions) {
    this.maxKeys = opts.maxKeys ?? 100_000;
    this.nowMs = opts.nowMs ?? (() => performance.now());
  }

  /** Takes a token for `key`; false when its bucket is empty (the request is over the limit). */
  take(key: string): boolean {
    const now = this.nowMs();
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.prune(now);
      b = { tokens: this.opts.burst, at: now };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(this.opts.burst, b.tokens + ((now - b.at) * this.opts.rate) / 1000);
      b.at = now;
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  get size(): number {
    return this.buckets.size;
  }

  private prune(now: number): void {
    const refill = (this.opts.burst / this.opts.rate) * 1000;
    for (const [k, b] of this.buckets) if (now - b.at >= refill) this.buckets.delete(k);
    if (this.buckets.size < this.maxKeys) return;
    let drop = this.buckets.size - Math.floor(this.maxKeys / 2);
    for (const k of this.buckets.keys()) {
      if (drop-- <= 0) break;
      this.buckets.delete(k);
    }
  }
}
