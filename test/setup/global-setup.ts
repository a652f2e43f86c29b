// Jest globalSetup of the e2e project only (jest.config.js): Jest runs a project's globalSetup
// only when at least one of its test files is selected, so `npx jest test/unit/...` or
// `--selectProjects unit db` never installs anything. It makes Chromium available before any
// browser test starts, or stops the run at once with one line saying what to run.
import { browserSkipReason, chromiumPath, DEFAULT_CHROMIUM_PATH, ensureChromium } from './chromium';

/** An error Jest prints as exactly this line (it prints `stack`), with no trace around it. */
export class OneLineError extends Error {
  constructor(line: string) {
    super(line);
    this.name = 'OneLineError';
    this.stack = line;
  }
}

export default function globalSetup(): void {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const skip = browserSkipReason();
  if (skip) {
    log(`e2e: ${skip}: the browser tests are reported as skipped, not run`);
    return;
  }
  const p = chromiumPath();
  const result = ensureChromium({ path: p, installable: p === DEFAULT_CHROMIUM_PATH, log });
  if (!result.ok) throw new OneLineError(result.line);
}
