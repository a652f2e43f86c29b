// A database read behind a gauge, shared by every scrape: at most one read at a time, and none
// while the last one is younger than maxAgeMs. A scrape that finds the value stale answers with
// it at once and starts one read in the background, so no scrape waits on a slow query and no
// number of scrapers adds load. Only the first scrape of a process, with nothing read yet, waits
// for its read.

export interface CachedReadOptions {
  /** A value this young is served without reading again. */
  maxAgeMs: number;
  /** Milliseconds, for the age (the app's clock in tests). */
  now?: () => number;
  /** Told when a background read fails; the last value stays served. */
  onError?: (err: unknown) => void;
}

export function cachedRead<T>(read: () => Promise<T>, opts: CachedReadOptions): () => Promise<T> {
  const now = opts.now ?? Date.now;
  let last: { value: T; at: number } | null = null;
  let inFlight: Promise<T> | null = null;
  const refresh = (): Promise<T> =>
    (inFlight ??= read()
      .then((value) => {
        // aged from when the read finished: a slow read is never followed by another at once
        last = { value, at: now() };
        return value;
      })
      .finally(() => {
        inFlight = null;
      }));
  return async () => {
    if (last && now() - last.at < opts.maxAgeMs) return last.value;
    const reading = refresh();
    if (!last) return reading;
    reading.catch((err: unknown) => opts.onError?.(err));
    return last.value;
  };
}
