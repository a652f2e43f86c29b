// Stage 1's view of the pixel keys: an in-memory map of active keys (WebPixel rows not removed)
// to shop domains. It is loaded on first use and reloaded in the background when older than
// refreshMs, only while requests come (an idle process makes no query). A key it does not hold
// is looked up once, then not again for missRetryMs, and misses are looked up at a bounded rate
// overall, so random keys cannot turn requests into queries. Nothing of an unknown key is kept
// but that bounded, short-lived "looked up at" mark.
import type { Db } from '../db/client';
import type { Logger } from '../observability/logger';
import { TokenBuckets } from '../lib/rate-limit';

export interface PixelKeysOptions {
  refreshMs?: number;
  missRetryMs?: number;
  /** Misses remembered at most (the oldest are forgotten first). */
  maxMisses?: number;
  /** Database look-ups of unknown keys per second, for the whole process. */
  missLookupsPerSec?: number;
  nowMs?: () => number;
}

export interface PixelKeys {
  /** The shop domain of an active key, or null. Never throws. */
  shopFor(key: string): Promise<string | null>;
}

export function createPixelKeys(db: Db, logger: Logger, opts: PixelKeysOptions = {}): PixelKeys {
  const refreshMs = opts.refreshMs ?? 60_000;
  const missRetryMs = opts.missRetryMs ?? 30_000;
  const maxMisses = opts.maxMisses ?? 10_000;
  const nowMs = opts.nowMs ?? (() => performance.now());
  const lookups = new TokenBuckets({ rate: opts.missLookupsPerSec ?? 20, burst: opts.missLookupsPerSec ?? 20, nowMs });
  let known = new Map<string, string>();
  const missed = new Map<string, number>();
  const inflight = new Map<string, Promise<string | null>>();
  let loadedAt = -Infinity;
  let loading: Promise<void> | null = null;
  let loadedOnce = false;

  const load = () =>
    (loading ??= (async () => {
      try {
        const rows = await db.webPixel.findMany({
          where: { state: { not: 'removed' } },
          select: { key: true, shop: { select: { domain: true } } },
        });
        known = new Map(rows.map((r) => [r.key, r.shop.domain]));
        loadedOnce = true;
        loadedAt = nowMs();
      } catch (err) {
        // keep what we had; try again a little later
        loadedAt = nowMs() - refreshMs + 5_000;
        logger.warn({ err: (err as Error).message }, 'could not load the storefront pixel keys');
      } finally {
        loading = null;
      }
    })());

  async function lookup(key: string): Promise<string | null> {
    missed.delete(key);
    missed.set(key, nowMs());
    if (missed.size > maxMisses)
      for (const k of missed.keys())
        if (missed.size > maxMisses / 2) missed.delete(k);
        else break;
    try {
      const row = await db.webPixel.findUnique({ where: { key }, select: { state: true, shop: { select: { domain: true } } } });
      if (!row || row.state === 'removed') return null;
      known.set(key, row.shop.domain);
      missed.delete(key);
      return row.shop.domain;
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'could not look up a storefront pixel key');
      return null;
    }
  }

  return {
    async shopFor(key) {
      // the first load is waited for; later ones run beside the requests
      if (nowMs() - loadedAt > refreshMs) {
        if (loadedOnce) void load();
        else await load();
      }
      const domain = known.get(key);
      if (domain) return domain;
      const at = missed.get(key);
      if (at !== undefined && nowMs() - at < missRetryMs) return null;
      const running = inflight.get(key);
      if (running) return running;
      if (!lookups.take('all')) return null;
      const p = lookup(key).finally(() => inflight.delete(key));
      inflight.set(key, p);
      return p;
    },
  };
}
