// Where the browser tests find Chromium, and how a test run makes sure it is there: the same
// scripts/ensure-chromium.sh as .ci/run (Debian's chromium through apt-get, as root or with
// sudo that asks no password; never a browser download of any other kind).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Where Debian's chromium package puts the browser. */
export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';
export const ENSURE_SCRIPT = path.resolve(__dirname, '..', '..', 'scripts', 'ensure-chromium.sh');
const ENSURE_SCRIPT_SHOWN = 'bash scripts/ensure-chromium.sh';

/** CHROMIUM_PATH points the tests at another Chromium; it is then used as it is, never installed. */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.CHROMIUM_PATH?.trim() || DEFAULT_CHROMIUM_PATH;
}

/**
 * The one escape hatch: SKIP_BROWSER_TESTS=1 reports every browser test as skipped (never as
 * passed) and says why. Null when the browser tests run.
 */
export function browserSkipReason(env: NodeJS.ProcessEnv = process.env): string | null {
  const v = env.SKIP_BROWSER_TESTS?.trim();
  return v && v !== '0' && v.toLowerCase() !== 'false' ? `SKIP_BROWSER_TESTS=${v} is set` : null;
}

export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export interface EnsureChromiumOptions {
  /** The browser the tests will launch. */
  path: string;
  /** Whether the ensure command can put a browser there (only Debian's path can be installed). */
  installable: boolean;
  /** Installs the browser; by default `bash scripts/ensure-chromium.sh`. */
  ensure?: { command: string; args: string[] };
  /** Progress lines (the install can take a minute). */
  log?: (line: string) => void;
  /** Longest the install may take. Default 15 min. */
  timeoutMs?: number;
}

export type EnsureChromiumResult =
  | { ok: true; installed: boolean }
  /** `line` is the one line to show: what is wrong and what to run. */
  | { ok: false; line: string };

function howToFix(installable: boolean): string {
  return installable
    ? `run "sudo apt-get install -y chromium" (or ${ENSURE_SCRIPT_SHOWN})`
    : `install Chromium there, or unset CHROMIUM_PATH to use Debian's ${DEFAULT_CHROMIUM_PATH}`;
}

function failure(o: EnsureChromiumOptions, why: string): EnsureChromiumResult {
  const line = `e2e needs Chromium at ${o.path}: ${howToFix(o.installable)}; or set SKIP_BROWSER_TESTS=1 to report the browser tests as skipped [${why}]`;
  return { ok: false, line: line.replace(/\s*\n\s*/g, ' ') };
}

/** Makes sure the browser is there, installing it when it can; never throws. */
export function ensureChromium(o: EnsureChromiumOptions): EnsureChromiumResult {
  if (isExecutable(o.path)) return { ok: true, installed: false };
  if (!o.installable) return failure(o, 'CHROMIUM_PATH names no executable file');
  const ensure = o.ensure ?? { command: 'bash', args: [ENSURE_SCRIPT] };
  o.log?.(`e2e: ${o.path} is missing; running ${ENSURE_SCRIPT_SHOWN} (apt-get install chromium)`);
  // stdout (what is being installed) shows as it goes; stderr is kept for the one failure line
  const run = spawnSync(ensure.command, ensure.args, {
    stdio: ['ignore', 'inherit', 'pipe'],
    encoding: 'utf8',
    timeout: o.timeoutMs ?? 15 * 60_000,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  const said = (run.stderr ?? '').trim().split('\n').filter(Boolean).pop();
  if (run.error) return failure(o, `${ensure.command} could not run: ${run.error.message}`);
  if (run.status !== 0) return failure(o, said ?? `${ENSURE_SCRIPT_SHOWN} exited with ${run.status ?? run.signal}`);
  if (!isExecutable(o.path)) return failure(o, `the install finished but ${o.path} is still missing`);
  return { ok: true, installed: true };
}
