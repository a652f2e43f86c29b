// The gauges Metrics reads from the database: one read for any number of concurrent scrapes, none
// while the last is younger than the maximum age, and never a scrape waiting on a slow read once
// a value exists.
import { Metrics } from '../../../src/observability/metrics';

/** A read the test finishes by hand. */
function controlledRead<T>() {
  const calls: Array<{ resolve: (v: T) => void; reject: (e: Error) => void }> = [];
  const read = () => new Promise<T>((resolve, reject) => calls.push({ resolve, reject }));
  return { read, calls };
}

const queued = (text: string) => Number(/^connector_outbox_messages\{status="queued"\} (\d+)$/m.exec(text)?.[1]);
const pending = (text: string) => Number(/^connector_receipts_pending (\d+)$/m.exec(text)?.[1]);
const settle = () => new Promise((r) => setImmediate(r));

describe('Metrics gauges read from the database', () => {
  let t: number;
  let errors: unknown[];
  let metrics: Metrics;
  let queue: ReturnType<typeof controlledRead<Record<string, number>>>;
  let lag: ReturnType<typeof controlledRead<{ pending: number; oldestAgeS: number }>>;
  beforeEach(() => {
    t = 1_000_000;
    errors = [];
    metrics = new Metrics({ gaugeMaxAgeMs: 15_000, now: () => t, onGaugeError: (e) => errors.push(e) });
    queue = controlledRead();
    lag = controlledRead();
    metrics.onScrape(queue.read);
    metrics.onScrapeLag(lag.read);
  });

  it('reads the pending storefront claims the same way: one read for 100 scrapes', async () => {
    const claims = controlledRead<number>();
    metrics.onScrapeClaims(claims.read);
    const scrapes = Array.from({ length: 100 }, () => metrics.registry.metrics());
    await settle();
    expect(claims.calls).toHaveLength(1);
    claims.calls[0]!.resolve(4);
    queue.calls[0]!.resolve({});
    lag.calls[0]!.resolve({ pending: 0, oldestAgeS: 0 });
    for (const text of await Promise.all(scrapes)) expect(text).toMatch(/^connector_pixel_claims_pending 4$/m);
  });

  it('reads the storefront events waiting for product data the same way: one read for 100 scrapes', async () => {
    const waiting = controlledRead<number>();
    metrics.onScrapeWaitingForProducts(waiting.read);
    const scrapes = Array.from({ length: 100 }, () => metrics.registry.metrics());
    await settle();
    expect(waiting.calls).toHaveLength(1);
    waiting.calls[0]!.resolve(12);
    queue.calls[0]!.resolve({});
    lag.calls[0]!.resolve({ pending: 0, oldestAgeS: 0 });
    for (const text of await Promise.all(scrapes)) expect(text).toMatch(/^connector_pixel_events_waiting_for_products 12$/m);
  });

  it('100 concurrent first scrapes share one read of each, and wait for it', async () => {
    const scrapes = Array.from({ length: 100 }, () => metrics.registry.metrics());
    await settle();
    expect([queue.calls.length, lag.calls.length]).toEqual([1, 1]);
    queue.calls[0]!.resolve({ queued: 7 });
    lag.calls[0]!.resolve({ pending: 3, oldestAgeS: 2 });
    for (const text of await Promise.all(scrapes)) {
      expect(queued(text)).toBe(7);
      expect(pending(text)).toBe(3);
    }
  });

  it('reads again only once the value is 15 s old, answering meanwhile, and after, at once from the last read', async () => {
    const first = metrics.registry.metrics();
    await settle();
    queue.calls[0]!.resolve({ queued: 1 });
    lag.calls[0]!.resolve({ pending: 1, oldestAgeS: 0 });
    await first;

    t += 14_999;
    expect(queued(await metrics.registry.metrics())).toBe(1);
    expect([queue.calls.length, lag.calls.length]).toEqual([1, 1]);

    t += 1;
    // the second read hangs (a big query on a busy database): scrapes still answer, with the last values
    const stale = await Promise.all(Array.from({ length: 100 }, () => metrics.registry.metrics()));
    for (const text of stale) expect(queued(text)).toBe(1);
    expect([queue.calls.length, lag.calls.length]).toEqual([2, 2]);

    queue.calls[1]!.resolve({ queued: 5 });
    lag.calls[1]!.resolve({ pending: 4, oldestAgeS: 1 });
    await settle();
    const text = await metrics.registry.metrics();
    expect([queued(text), pending(text)]).toEqual([5, 4]);
    expect([queue.calls.length, lag.calls.length]).toEqual([2, 2]);
  });

  it('a read that fails keeps the last values served, reports the error, and the next scrape tries again', async () => {
    const first = metrics.registry.metrics();
    await settle();
    queue.calls[0]!.resolve({ queued: 2 });
    lag.calls[0]!.resolve({ pending: 0, oldestAgeS: 0 });
    await first;

    t += 20_000;
    expect(queued(await metrics.registry.metrics())).toBe(2);
    queue.calls[1]!.reject(new Error('database unreachable'));
    lag.calls[1]!.resolve({ pending: 0, oldestAgeS: 0 });
    await settle();
    expect(errors).toEqual([new Error('database unreachable')]);

    expect(queued(await metrics.registry.metrics())).toBe(2);
    expect(queue.calls.length).toBe(3);
  });

  it('the first read failing fails the scrape (the route answers 503)', async () => {
    const first = metrics.registry.metrics();
    await settle();
    queue.calls[0]!.reject(new Error('database unreachable'));
    lag.calls[0]!.resolve({ pending: 0, oldestAgeS: 0 });
    await expect(first).rejects.toThrow('database unreachable');
  });
});
