// The e2e globalSetup's logic, against fake browser paths and fake install commands: the real
// Chromium on this machine is never touched and nothing is installed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { browserSkipReason, chromiumPath, DEFAULT_CHROMIUM_PATH, ensureChromium } from '../../setup/chromium';
import globalSetup, { OneLineError } from '../../setup/global-setup';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chromium-setup-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const sh = (script: string) => ({ command: 'bash', args: ['-c', script] });

describe('ensureChromium', () => {
  it('does nothing when the browser is already there', () => {
    const browser = path.join(dir, 'chromium');
    fs.writeFileSync(browser, '#!/bin/sh\n', { mode: 0o755 });
    const marker = path.join(dir, 'ran');
    expect(ensureChromium({ path: browser, installable: true, ensure: sh(`touch ${marker}`) })).toEqual({ ok: true, installed: false });
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('runs the ensure command when the browser is missing, and succeeds once it is there', () => {
    const browser = path.join(dir, 'chromium');
    const logged: string[] = [];
    const r = ensureChromium({
      path: browser,
      installable: true,
      ensure: sh(`printf '#!/bin/sh\\n' > ${browser} && chmod +x ${browser}`),
      log: (l) => logged.push(l),
    });
    expect(r).toEqual({ ok: true, installed: true });
    expect(logged.join('\n')).toMatch(/is missing; running bash scripts\/ensure-chromium\.sh/);
  });

  it('fails with one line saying what to run, and why, when the install cannot be done', () => {
    const runs = path.join(dir, 'runs');
    const r = ensureChromium({
      path: path.join(dir, 'chromium'),
      installable: true,
      ensure: sh(
        `echo run >> ${runs}; echo "apt-get: some noise" >&2; echo "ensure-chromium: installing chromium with apt-get needs root or sudo without a password prompt" >&2; exit 1`,
      ),
    });
    // tried once, not again and again
    expect(fs.readFileSync(runs, 'utf8')).toBe('run\n');
    expect(r.ok).toBe(false);
    const line = (r as { line: string }).line;
    expect(line).not.toContain('\n');
    expect(line).toMatch(/^e2e needs Chromium at .*: run "sudo apt-get install -y chromium" \(or bash scripts\/ensure-chromium\.sh\)/);
    expect(line).toContain('[ensure-chromium: installing chromium with apt-get needs root or sudo without a password prompt]');
    expect(line).toContain('SKIP_BROWSER_TESTS=1');
  });

  it('fails when the install says it worked but the browser is still missing', () => {
    const r = ensureChromium({ path: path.join(dir, 'chromium'), installable: true, ensure: sh('exit 0') });
    expect(r).toEqual({ ok: false, line: expect.stringMatching(/the install finished but .*chromium is still missing\]$/) });
  });

  it('fails when the ensure command cannot start at all', () => {
    const r = ensureChromium({
      path: path.join(dir, 'chromium'),
      installable: true,
      ensure: { command: path.join(dir, 'no-such-command'), args: [] },
    });
    expect(r).toEqual({ ok: false, line: expect.stringMatching(/could not run/) });
  });

  it('never installs for a CHROMIUM_PATH of its own: it names the path instead', () => {
    const marker = path.join(dir, 'ran');
    const r = ensureChromium({ path: path.join(dir, 'my-chrome'), installable: false, ensure: sh(`touch ${marker}`) });
    expect(r).toEqual({
      ok: false,
      line: expect.stringMatching(
        /my-chrome: install Chromium there, or unset CHROMIUM_PATH .*\[CHROMIUM_PATH names no executable file\]$/,
      ),
    });
    expect(fs.existsSync(marker)).toBe(false);
  });
});

describe('the environment', () => {
  it('CHROMIUM_PATH overrides Debian’s path', () => {
    expect(chromiumPath({})).toBe(DEFAULT_CHROMIUM_PATH);
    expect(chromiumPath({ CHROMIUM_PATH: ' /opt/chromium/chrome ' })).toBe('/opt/chromium/chrome');
  });

  it('only an explicit SKIP_BROWSER_TESTS skips the browser tests, and it says so', () => {
    expect(browserSkipReason({})).toBeNull();
    expect(browserSkipReason({ CI: 'true' })).toBeNull();
    expect(browserSkipReason({ SKIP_BROWSER_TESTS: '0' })).toBeNull();
    expect(browserSkipReason({ SKIP_BROWSER_TESTS: 'false' })).toBeNull();
    expect(browserSkipReason({ SKIP_BROWSER_TESTS: '1' })).toBe('SKIP_BROWSER_TESTS=1 is set');
  });
});

describe('the e2e globalSetup', () => {
  const saved = { CHROMIUM_PATH: process.env.CHROMIUM_PATH, SKIP_BROWSER_TESTS: process.env.SKIP_BROWSER_TESTS };
  afterEach(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('stops the run with an error Jest prints as one line when the browser is missing', () => {
    process.env.CHROMIUM_PATH = path.join(dir, 'missing-chromium');
    delete process.env.SKIP_BROWSER_TESTS;
    let thrown: unknown;
    try {
      globalSetup();
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(OneLineError);
    // jest-cli prints error.stack, and rewrites error.message: the stack must stay the one line
    const err = thrown as OneLineError;
    err.message = `Jest: Got error running globalSetup - x, reason: ${err.message}`;
    expect(err.stack).toMatch(/^e2e needs Chromium at .*missing-chromium: [^\n]+$/);
  });

  it('installs nothing and does not fail with SKIP_BROWSER_TESTS=1', () => {
    process.env.CHROMIUM_PATH = path.join(dir, 'missing-chromium');
    process.env.SKIP_BROWSER_TESTS = '1';
    const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(() => globalSetup()).not.toThrow();
      expect(write).toHaveBeenCalledWith(expect.stringMatching(/SKIP_BROWSER_TESTS=1 is set: the browser tests are reported as skipped/));
    } finally {
      write.mockRestore();
    }
  });

  it('belongs to the e2e project alone, so unit, db and fault runs never install a browser', () => {
    const config = require('../../../jest.config.js') as {
      globalSetup?: string;
      projects: Array<{ displayName: string; globalSetup?: string }>;
    };
    expect(config.globalSetup).toBeUndefined();
    const withSetup = config.projects.filter((p) => p.globalSetup).map((p) => [p.displayName, p.globalSetup]);
    expect(withSetup).toEqual([['e2e', '<rootDir>/test/setup/global-setup.ts']]);
  });
});
