// The app as a real OS process (node --import tsx src/main.ts), for crash and multi-process
// tests. Logs go to a file so a failing test can show them.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');

export interface AppProcess {
  url: string;
  pid: number;
  child: ChildProcess;
  logFile: string;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function spawnApp(env: Record<string, string>, opts: { timeoutMs?: number } = {}): Promise<AppProcess> {
  const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'connector-proc-')), 'app.log');
  const out = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'src', 'main.ts')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', SANDBOX: '1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', out, out],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  // the port comes from the "connector listening" log line
  for (;;) {
    const text = fs.readFileSync(logFile, 'utf8');
    const m = text.match(/"port":(\d+)[^\n]*connector listening/);
    if (m) {
      return {
        url: `http://127.0.0.1:${m[1]}`,
        pid: child.pid!,
        child,
        logFile,
        kill: async (signal = 'SIGTERM') => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      };
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`app process did not start: ${text.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
