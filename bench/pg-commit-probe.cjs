// A diagnostic, not a benchmark of the app: PostgreSQL's own commit latency on this machine,
// the floor under stage 1's answer time there. Open loop: `rate` commits a second (default 250),
// each one INSERT of `rows` 2 KB rows (default 4), as stage 1's group commits write them at
// 1,000 webhooks/s; 5 s x 3 rounds; latency from each commit's scheduled start. No app runs.
//   node bench/pg-commit-probe.cjs [rate] [rows]     (BENCH_PG_URL, default local postgres)
const pg = require('pg');
const rate = Number(process.argv[2] ?? 250),
  rows = Number(process.argv[3] ?? 4);
(async () => {
  const pool = new pg.Pool({ connectionString: process.env.BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres', max: 10 });
  await pool.query('DROP TABLE IF EXISTS commit_probe');
  await pool.query('CREATE TABLE commit_probe (id bigserial primary key, webhook text unique, body text, at timestamptz)');
  const body = 'x'.repeat(2000);
  let n = 0;
  console.log('| round | commits/s | rows each | p50 ms | p99 ms | max ms |\n| --- | --- | --- | --- | --- | --- |');
  for (let round = 0; round < 3; round++) {
    const lat = [];
    const inflight = [];
    const t0 = performance.now() + 10,
      total = rate * 5;
    for (let i = 0; i < total; i++) {
      const at = t0 + (i * 1000) / rate;
      const wait = at - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait - 1));
      const values = [];
      const params = [];
      for (let k = 0; k < rows; k++) {
        n++;
        params.push(`w${n}`, body);
        values.push(`($${2 * k + 1}, $${2 * k + 2}, now())`);
      }
      // from the scheduled start, or from the start itself when the timer woke a little early
      const from = Math.min(at, performance.now());
      inflight.push(
        pool
          .query(`INSERT INTO commit_probe (webhook, body, at) VALUES ${values.join(',')}`, params)
          .then(() => lat.push(performance.now() - from)),
      );
    }
    await Promise.all(inflight);
    lat.sort((a, b) => a - b);
    const p = (q) => lat[Math.min(lat.length - 1, Math.ceil(q * lat.length) - 1)].toFixed(1);
    console.log(`| ${round + 1} | ${rate} | ${rows} | ${p(0.5)} | ${p(0.99)} | ${lat[lat.length - 1].toFixed(0)} |`);
  }
  await pool.query('DROP TABLE commit_probe');
  await pool.end();
})();
