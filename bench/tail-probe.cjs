// Diagnostic preload, not a benchmark: where a server's response-time tail comes from. Load it
// into the app processes with BENCH_NODE_ARGS="--require ./bench/tail-probe.cjs"; each second
// it writes one line to the process's stderr (the bench's log file for that process):
//   requests timed inside the server (p50 / p99 / max ms), the event loop's delay (p99 / max),
//   GC pauses (count, total, longest, and the mark-compacts), and the WAL syncs (fdatasync on
//   a FileHandle: count, p50 / p99 / max, total).
// Main thread only: a worker thread (the SQLite checkpointer) loads it too, and returns here.
'use strict';
const { isMainThread } = require('node:worker_threads');
if (isMainThread) {
  const http = require('node:http');
  const fs = require('node:fs');
  const { monitorEventLoopDelay, PerformanceObserver, constants } = require('node:perf_hooks');

  const loop = monitorEventLoopDelay({ resolution: 2 });
  loop.enable();
  let requests = [];
  let syncs = [];
  let gc = { n: 0, total: 0, max: 0, major: 0 };

  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (event, req, res) {
    if (event === 'request') {
      const t = performance.now();
      res.once('finish', () => requests.push(performance.now() - t));
    }
    return emit.apply(this, arguments);
  };

  // FileHandle is not exported: take its prototype from a handle
  fs.promises.open(__filename, 'r').then((h) => {
    const proto = Object.getPrototypeOf(h);
    const datasync = proto.datasync;
    proto.datasync = async function () {
      const t = performance.now();
      try {
        return await datasync.call(this);
      } finally {
        syncs.push(performance.now() - t);
      }
    };
    return h.close();
  });

  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gc.n += 1;
      gc.total += e.duration;
      gc.max = Math.max(gc.max, e.duration);
      if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) gc.major += 1;
    }
  }).observe({ entryTypes: ['gc'] });

  const q = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0);
  const f = (v) => v.toFixed(1);
  setInterval(() => {
    if (requests.length || syncs.length) {
      const r = requests.sort((a, b) => a - b);
      const s = syncs.sort((a, b) => a - b);
      process.stderr.write(
        `TAIL ${new Date().toISOString().slice(11, 19)} requests ${r.length} p50/p99/max ${f(q(r, 0.5))}/${f(q(r, 0.99))}/${f(q(r, 1))} ms` +
          ` | loop p99/max ${f(loop.percentile(99) / 1e6)}/${f(loop.max / 1e6)} ms` +
          ` | gc ${gc.n} pauses ${f(gc.total)} ms, longest ${f(gc.max)}, mark-compacts ${gc.major}` +
          ` | syncs ${s.length} p50/p99/max ${f(q(s, 0.5))}/${f(q(s, 0.99))}/${f(q(s, 1))} ms, total ${f(s.reduce((a, b) => a + b, 0))}\n`,
      );
    }
    requests = [];
    syncs = [];
    gc = { n: 0, total: 0, max: 0, major: 0 };
    loop.reset();
  }, 1000).unref();
}
