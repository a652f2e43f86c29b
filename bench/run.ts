// npm run bench: every benchmark, one after another, each printing its tables (markdown) on
// stdout. The whole report is also written to bench/out/report.md (git-ignored), ready to be
// copied into BENCHMARKS.md.
//   npm run bench                      everything
//   npm run bench -- ingest            one (or several: ingest scale), by name
//   npm run bench -- --only ingest,scale
//   npm run bench -- scale --db postgres   (--db sqlite|postgres|both, default both)
// Names: ingest, pixel, scale, latency, pacing, priority, restock, backlog, big-order, due. PostgreSQL: BENCH_PG_URL (or PG_URL), default
// postgresql://postgres@127.0.0.1:5432/postgres; a fresh database is created and dropped for each.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root } from './lib';

const BENCHES = ['ingest', 'pixel', 'scale', 'latency', 'pacing', 'priority', 'restock', 'backlog', 'big-order', 'due'] as const;

function loadAverage(): string {
  const [l1, l5, l15] = os.loadavg();
  return `${l1!.toFixed(2)} / ${l5!.toFixed(2)} / ${l15!.toFixed(2)} (1 / 5 / 15 min)`;
}

/** The commit measured, and whether src/ differs from it (others may be editing the tree). */
function revision(): string {
  const git = (...a: string[]) => spawnSync('git', a, { cwd: root, encoding: 'utf8' }).stdout?.trim() ?? '';
  const head = git('log', '-1', '--format=%h %s');
  const dirty = git('status', '--porcelain', '--', 'src', 'prisma').split('\n').filter(Boolean).length;
  return `${head || 'unknown'}${dirty ? `; ${dirty} uncommitted change(s) in src/ or prisma/ were in the working tree` : '; src/ and prisma/ as committed'}`;
}

function machine(args: string[]): string {
  const cpu = /model name\s*:\s*(.*)/.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  return [
    `- Date: ${new Date().toISOString()}`,
    `- Machine: ${os.cpus().length} CPUs (nproc), ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, ${os.platform()} ${os.release()}`,
    `- Node ${process.version}; load average at the start ${loadAverage()}`,
    `- Code: ${revision()}`,
    `- Command: npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}`,
  ].join('\n');
}

/** Runs one benchmark script, streaming its output and keeping a copy. */
function runScript(name: string, args: string[]): Promise<{ status: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench', `${name}.ts`), ...args], {
      cwd: root,
      env: process.env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      process.stdout.write(chunk);
    });
    child.on('close', (status) => resolve({ status, stdout }));
  });
}

/** Benchmarks named by position (`ingest scale`) or by `--only a,b`; all when none. */
export function selected(args: string[]): string[] {
  const names: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--only') names.push(...(args[++i] ?? '').split(','));
    else if (a === '--db') i++;
    else if (!a.startsWith('-')) names.push(...a.split(','));
  }
  const unknown = names.filter((n) => n && !(BENCHES as readonly string[]).includes(n));
  if (unknown.length) throw new Error(`unknown benchmark ${unknown.join(', ')}; the benchmarks are ${BENCHES.join(', ')}`);
  return names.length ? BENCHES.filter((b) => names.includes(b)) : [...BENCHES];
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const only = selected(args);
  const passthrough = args.includes('--db') ? ['--db', args[args.indexOf('--db') + 1]!] : [];
  const started = Date.now();
  const parts = [`## Run\n\n${machine(args)}\n`];
  console.log(parts[0]);
  let failed = 0;
  for (const name of only) {
    const t = Date.now();
    const before = loadAverage();
    const res = await runScript(name, passthrough);
    const footer = `\n_${name}: ${((Date.now() - t) / 1000).toFixed(0)} s${res.status === 0 ? '' : `, FAILED (exit ${res.status})`}; load average before ${before}, after ${loadAverage()}_\n`;
    if (res.status !== 0) failed += 1;
    console.log(footer);
    parts.push(`${res.stdout.trim()}\n${footer}`);
  }
  const tail = `_Total ${((Date.now() - started) / 1000).toFixed(0)} s; load average at the end ${loadAverage()}._`;
  console.log(tail);
  parts.push(tail);
  const outDir = path.join(root, 'bench', 'out');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'report.md'), `${parts.join('\n')}\n`);
  console.log('\n(report written to bench/out/report.md)');
  process.exit(failed ? 1 : 0);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
