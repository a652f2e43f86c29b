// A diagnostic preload, not part of any benchmark: counts the SQL statements a process sends,
// at the driver (pg's Client.query, better-sqlite3's Statement run/get/all/iterate), and writes
// the running totals by statement shape, as a JSON line, to $QUERY_COUNT_FILE.<pid> every
// second in which there were new ones (deltas between two lines: what happened between). E.g.:
//   BENCH_NODE_ARGS="--require ./bench/count-queries.cjs" QUERY_COUNT_FILE=/tmp/q.json \
//     npx tsx bench/scale.ts --db sqlite
// Nothing in src/ is changed.
const fs = require('node:fs');

const file = process.env.QUERY_COUNT_FILE;
const counts = new Map();

function shape(sql) {
  const text = String(typeof sql === 'object' && sql !== null ? sql.text : sql)
    .replace(/\s+/g, ' ')
    .trim();
  const verb = /^WITH/i.test(text)
    ? `WITH-${(/\)\s+(SELECT|UPDATE|INSERT|DELETE)\s/i.exec(text) || [])[1] || '?'}`
    : (/^(\w+)/.exec(text) || [])[1] || '?';
  const table = (/(?:FROM|INTO|UPDATE)\s+(?:[`"]?main[`"]?\.|[`"]?public[`"]?\.)?[`"]?(\w+)/i.exec(text) || [])[1] || '';
  return `${verb.toUpperCase()} ${table}`.trim();
}

function count(sql) {
  const k = shape(sql);
  counts.set(k, (counts.get(k) || 0) + 1);
}

try {
  const pg = require(require.resolve('pg', { paths: [process.cwd()] }));
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, ...rest) {
    count(config);
    return query.call(this, config, ...rest);
  };
} catch {
  // no pg here
}

try {
  const Database = require(require.resolve('better-sqlite3', { paths: [process.cwd()] }));
  const probe = new Database(':memory:');
  const Statement = Object.getPrototypeOf(probe.prepare('SELECT 1'));
  probe.close();
  for (const m of ['run', 'get', 'all', 'iterate']) {
    const fn = Statement[m];
    Statement[m] = function (...args) {
      if (!/^\s*(PRAGMA|SELECT 1$)/i.test(this.source)) count(this.source);
      return fn.apply(this, args);
    };
  }
} catch {
  // no better-sqlite3 here
}

if (file) {
  const out = `${file}.${process.pid}`;
  let last = -1;
  const write = () => {
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    if (total === last) return;
    last = total;
    fs.appendFileSync(out, `${JSON.stringify({ at: Date.now(), total, counts: Object.fromEntries(counts) })}\n`);
  };
  setInterval(write, 1000).unref();
  process.on('exit', write);
}
