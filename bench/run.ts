// npm run bench: every benchmark, one after another, each printing its tables (markdown) on
// stdout. The whole report is also written to bench/out/report.md (git-ignored), ready to be
// copied into BENCHMARKS.md. Options: --db sqlite|postgres|both (default both); --only NAME,...
// (ingest, pacing, latency, backlog). PostgreSQL: BENCH_PG_URL (or PG_URL), default
// postgresql://postgres@127.0.0.1:5432/postgres; a fresh database is created and dropped for each.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root } from './prisma-client';

const BENCHES = ['ingest', 'pacing', 'latency', 'backlog'] as const;

function machine(): string {
  const cpu = /model name\s*:\s*(.*)/.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  const [l1, l5] = os.loadavg();
  return [
    `- Date: ${new Date().toISOString()}`,
    `- Machine: ${os.cpus().length} CPUs (nproc), ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, ${os.platform()} ${os.release()}`,
    `- Node ${process.version}; load average at start ${l1!.toFixed(2)} (1 min), ${l5!.toFixed(2)} (5 min)`,
    `- Command: npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
  ].join('\n');
}

/** Runs one benchmark script, streaming its output and keeping a copy. */
function runScript(name: string, args: string[]): Promise<{ status: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench', `${name}.ts`), ...args], { cwd: root, env: process.env, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      process.stdout.write(chunk);
    });
    child.on('close', (status) => resolve({ status, stdout }));
  });
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1]!.split(',') : [...BENCHES];
  const passthrough = args.includes('--db') ? ['--db', args[args.indexOf('--db') + 1]!] : [];
  const started = Date.now();
  const parts = [`## Run\n\n${machine()}\n`];
  console.log(parts[0]);
  let failed = 0;
  for (const name of BENCHES.filter((b) => only.includes(b))) {
    const t = Date.now();
    const res = await runScript(name, passthrough);
    const footer = `\n_${name}: ${((Date.now() - t) / 1000).toFixed(0)} s${res.status === 0 ? '' : `, FAILED (exit ${res.status})`}_\n`;
    if (res.status !== 0) failed += 1;
    console.log(footer);
    parts.push(`${res.stdout.trim()}\n${footer}`);
  }
  const [l1] = os.loadavg();
  const tail = `_Total ${((Date.now() - started) / 1000).toFixed(0)} s; load average at the end ${l1!.toFixed(2)}._`;
  console.log(tail);
  parts.push(tail);
  const outDir = path.join(root, 'bench', 'out');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'report.md'), `${parts.join('\n')}\n`);
  console.log('\n(report written to bench/out/report.md)');
  process.exit(failed ? 1 : 0);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
