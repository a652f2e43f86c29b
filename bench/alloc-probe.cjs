// Diagnostic preload, not a benchmark: what a server allocates per request, by function. Load it
// into the app processes with BENCH_NODE_ARGS="--require ./bench/alloc-probe.cjs". It runs V8's
// sampling heap profiler with collected objects included (so short-lived garbage counts, which
// is what drives the scavenges), and every 20 s writes one file per process to
// $ALLOC_PROBE_DIR (default <tmp>/alloc-probe): `<pid>-<n>.txt`, the requests served in that
// window, the sampled bytes per request, and the 40 functions that allocated most, per request.
// Sampling every 8 KB on average: figures are estimates, good for comparing code, not for tails.
// Main thread only: a worker thread (the SQLite checkpointer) loads it too, and returns here.
'use strict';
const { isMainThread } = require('node:worker_threads');
if (isMainThread) {
  const inspector = require('node:inspector');
  const http = require('node:http');
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');

  const dir = process.env.ALLOC_PROBE_DIR || path.join(os.tmpdir(), 'alloc-probe');
  fs.mkdirSync(dir, { recursive: true });
  const session = new inspector.Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));
  const start = () =>
    post('HeapProfiler.startSampling', {
      samplingInterval: 8192,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });

  let requests = 0;
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (event) {
    if (event === 'request') requests += 1;
    return emit.apply(this, arguments);
  };

  const where = (cf) =>
    `${cf.functionName || '(anonymous)'} ${cf.url.replace(/^.*node_modules\//, 'node_modules/').replace(`file://${process.cwd()}/`, '')}:${cf.lineNumber + 1}`;

  start().catch((err) => process.stderr.write(`alloc-probe: could not start the sampler: ${err.message}\n`));
  let window = 0;
  setInterval(async () => {
    const served = requests;
    requests = 0;
    const { profile } = await post('HeapProfiler.stopSampling');
    await start();
    // too few requests for a per-request figure (a quiet window)
    if (served < 100) return;
    const bytes = new Map();
    let total = 0;
    const walk = (node) => {
      total += node.selfSize;
      const k = where(node.callFrame);
      bytes.set(k, (bytes.get(k) || 0) + node.selfSize);
      for (const child of node.children) walk(child);
    };
    walk(profile.head);
    const top = [...bytes].sort((a, b) => b[1] - a[1]).slice(0, 40);
    const lines = [
      `requests ${served}, sampled bytes ${total}, per request ${(total / served / 1024).toFixed(1)} KB`,
      ...top.map(([k, v]) => `${(v / served).toFixed(0).padStart(7)} B/request  ${k}`),
    ];
    fs.writeFileSync(path.join(dir, `${process.pid}-${window++}.txt`), `${lines.join('\n')}\n`);
  }, 20_000).unref();
}
