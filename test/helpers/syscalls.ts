// The system calls of this test process, as strace sees them: for claims only the kernel can
// check, such as "the commit was synced to disk before the answer was written". strace attaches
// to every thread of the process (the event loop, libuv's pool, SQLite's checkpoint thread) and
// writes one line per call, in the order they happened, with each descriptor's path (-y).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Whether strace can trace this process here (installed, and ptrace allowed). */
export function straceAvailable(): boolean {
  return spawnSync('strace', ['-e', 'trace=none', 'true'], { stdio: 'ignore' }).status === 0;
}

export interface SyscallTrace {
  /** Writes `label` to /dev/null: a mark in the trace at this moment of the test. */
  mark(label: string): void;
  /** Detaches and returns the traced lines. */
  stop(): Promise<string[]>;
}

/** Traces the write and sync calls of this process until stop(). */
export async function traceSyscalls(): Promise<SyscallTrace> {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'strace-')), 'trace.txt');
  const child: ChildProcess = spawn(
    'strace',
    ['-f', '-y', '-s', '24', '-e', 'trace=pwrite64,pwritev,write,writev,fdatasync,fsync', '-o', out, '-p', String(process.pid)],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`strace did not attach: ${stderr}`)), 10_000);
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (/attached/.test(stderr)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`strace exited with ${code}: ${stderr}`));
    });
  });
  // it announces each thread as it attaches: let it finish with all of them
  await new Promise((r) => setTimeout(r, 300));
  const devNull = fs.openSync('/dev/null', 'w');
  return {
    mark: (label) => void fs.writeSync(devNull, label),
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGINT');
      await exited;
      fs.closeSync(devNull);
      const lines = fs.readFileSync(out, 'utf8').split('\n').filter(Boolean);
      fs.rmSync(path.dirname(out), { recursive: true, force: true });
      return lines;
    },
  };
}

/**
 * Whether a sync of the SQLite WAL at `walPath` completed after the last write to that WAL
 * before line `until`, and before that line: the commit written last was on disk by then.
 */
export function walSyncedBefore(lines: string[], until: number, walPath: string): boolean {
  const onWal = (l: string) => l.includes(`<${walPath}>`);
  let lastWrite = -1;
  for (let i = 0; i < until; i++) if (/\bpwrite(64|v)?\(/.test(lines[i]!) && onWal(lines[i]!)) lastWrite = i;
  if (lastWrite < 0) throw new Error(`no write to ${walPath} before line ${until}`);
  // a sync interrupted by another thread's call shows as "<unfinished ...>", then "resumed"
  const syncing = new Set<string>();
  for (let i = lastWrite + 1; i < until; i++) {
    const l = lines[i]!;
    const pid = l.split(' ', 1)[0]!;
    if (/\bf(data)?sync\(/.test(l) && onWal(l)) {
      if (l.includes('<unfinished')) syncing.add(pid);
      else if (/= 0$/.test(l)) return true;
    } else if (/<\.\.\. f(data)?sync resumed>.*= 0$/.test(l) && syncing.has(pid)) return true;
  }
  return false;
}
