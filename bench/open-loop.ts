// An open-loop load generator: requests are started on a fixed schedule (rate per second),
// whatever the answers, as Shopify's webhook senders do. A closed loop (autocannon) waits for
// an answer before sending the next request, so a slow server slows the load down and its
// latency is under-reported ("coordinated omission"). Here each response time runs from the
// moment the request was SCHEDULED to leave, so a late sender or a queue in the client counts
// against the server, never in its favour.
import { fork } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { percentile, root } from './lib';

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

export async function openLoop(
  url: string,
  opts: { rate: number; seconds: number; request: (i: number) => OpenLoopRequest; connections?: number; warmConnections?: number },
): Promise<OpenLoopResult> {
  const pool = new Pool(url, { connections: opts.connections ?? 256, pipelining: 1, keepAliveTimeout: 60_000 });
  // connections opened before the clock starts, as a sender that has been sending keeps them:
  // the first requests of a round then do not each wait for a TCP handshake (any answer will do)
  await Promise.all(
    Array.from({ length: opts.warmConnections ?? 0 }, () => pool.request({ path: '/healthz', method: 'GET' }).then((r) => r.body.dump())),
  );
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

/** Where a child process finds the requests: `bench/<module>.ts` exports `<factory>(): (i) => OpenLoopRequest`. */
export interface OpenLoopSource {
  module: string;
  factory: string;
}

export interface OpenLoopJob {
  url: string;
  rate: number;
  seconds: number;
  source: OpenLoopSource;
  warmConnections?: number;
}

export interface OpenLoopGenerator {
  run(job: OpenLoopJob): Promise<OpenLoopResult>;
  close(): Promise<void>;
}

/**
 * A process of its own that runs openLoop() jobs, one at a time (bench/open-loop-process.ts),
 * so that nothing else on the benchmark's event loop or heap delays the requests it starts or
 * the answers it stamps. Start it once and keep it: its code stays compiled between jobs.
 */
export async function startOpenLoopGenerator(): Promise<OpenLoopGenerator> {
  const child = fork(path.join(root, 'bench', 'open-loop-process.ts'), [], {
    cwd: root,
    execArgv: ['--import', 'tsx'],
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const waiting = new Map<number, { resolve(r: OpenLoopResult): void; reject(e: Error): void }>();
  let seq = 0;
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => {
      reject(new Error(`the open-loop generator exited with ${code}`));
      for (const w of waiting.values()) w.reject(new Error(`the open-loop generator exited with ${code}`));
    });
    child.on('message', (raw) => {
      const msg = raw as { ready?: boolean; id?: number; result?: OpenLoopResult; error?: string };
      if (msg.ready) return resolve();
      const w = waiting.get(msg.id ?? -1);
      if (!w) return;
      waiting.delete(msg.id!);
      if (msg.result) w.resolve(msg.result);
      else w.reject(new Error(`the open-loop generator failed: ${msg.error}`));
    });
  });
  return {
    run: (job) =>
      new Promise<OpenLoopResult>((resolve, reject) => {
        const id = ++seq;
        waiting.set(id, { resolve, reject });
        child.send({ id, job });
      }),
    close: async () => {
      if (child.connected) child.disconnect();
      await exited;
    },
  };
}
