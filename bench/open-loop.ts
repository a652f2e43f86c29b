// An open-loop load generator: requests are started on a fixed schedule (rate per second),
// whatever the answers, as Shopify's webhook senders do. A closed loop (autocannon) waits for
// an answer before sending the next request, so a slow server slows the load down and its
// latency is under-reported ("coordinated omission"). Here each response time runs from the
// moment the request was SCHEDULED to leave, so a late sender or a queue in the client counts
// against the server, never in its favour.
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { percentile } from './lib';

export interface OpenLoopRequest {
  /** Default: /webhooks. */
  path?: string;
  headers: Record<string, string>;
  body: string;
}

export interface OpenLoopResult {
  scheduled: number;
  ok: number;
  non2xx: number;
  errors: number;
  /** Response times (ms) of the 2xx answers, from the scheduled start. */
  latencies: number[];
  /** How late the generator started requests (ms): p99 and max. If this grows, the generator, not the server, was the bottleneck. */
  sendLag: { p99: number; max: number };
  /** Achieved start rate (requests/s). */
  startedPerSec: number;
}

export async function openLoop(url: string, opts: { rate: number; seconds: number; request: (i: number) => OpenLoopRequest; connections?: number }): Promise<OpenLoopResult> {
  const pool = new Pool(url, { connections: opts.connections ?? 256, pipelining: 1, keepAliveTimeout: 60_000 });
  const total = Math.round(opts.rate * opts.seconds);
  const period = 1000 / opts.rate;
  const latencies: number[] = [];
  const lags: number[] = [];
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  const inFlight = new Set<Promise<void>>();
  const fire = (i: number, scheduledAt: number) => {
    const r = opts.request(i);
    const p = pool
      .request({ path: r.path ?? '/webhooks', method: 'POST', headers: r.headers, body: r.body })
      .then(async (res) => {
        await res.body.dump();
        if (res.statusCode >= 200 && res.statusCode < 300) {
          ok += 1;
          latencies.push(performance.now() - scheduledAt);
        } else non2xx += 1;
      })
      .catch(() => {
        errors += 1;
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  const t0 = performance.now() + 20;
  let i = 0;
  let lastStart = t0;
  while (i < total) {
    const now = performance.now();
    while (i < total && t0 + i * period <= now) {
      const at = t0 + i * period;
      lags.push(now - at);
      fire(i, at);
      lastStart = now;
      i += 1;
    }
    // wake a little before the next slot; timers fire about 1 ms late
    await new Promise<void>((r) => setTimeout(r, Math.max(0, t0 + i * period - performance.now() - 1)));
  }
  await Promise.all(inFlight);
  await pool.close();
  return {
    scheduled: total,
    ok,
    non2xx,
    errors,
    latencies,
    sendLag: { p99: percentile(lags, 99), max: Math.max(...lags) },
    startedPerSec: (total - 1) / ((lastStart - t0) / 1000),
  };
}
