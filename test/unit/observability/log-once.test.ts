import { LogOnce, LoopFailures } from '../../../src/observability/log-once';
import type { Logger } from '../../../src/observability/logger';

function fakeLogger() {
  const lines: Array<{ level: string; fields: Record<string, unknown>; msg: string }> = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => void lines.push({ level, fields, msg });
  return { lines, logger: { warn: at('warn'), error: at('error'), info: at('info') } as unknown as Logger };
}

describe('a log line per key per interval', () => {
  it('logs a repeating fault once per interval, with how often it happened meanwhile', () => {
    let now = 0;
    const { lines, logger } = fakeLogger();
    const once = new LogOnce(logger, 60_000, () => now);
    for (let i = 0; i < 1000; i++) once.log('error', 'shop-a', { shopId: 'a' }, 'key unreadable');
    once.log('error', 'shop-b', { shopId: 'b' }, 'key unreadable');
    expect(lines).toHaveLength(2);
    now = 60_000;
    once.log('error', 'shop-a', { shopId: 'a' }, 'key unreadable');
    expect(lines).toHaveLength(3);
    expect(lines[2]!.fields).toEqual({ shopId: 'a', repeated: 999 });
  });

  it('logs at once again after the fault was cleared', () => {
    const { lines, logger } = fakeLogger();
    const once = new LogOnce(logger, 60_000, () => 0);
    once.log('warn', 'k', {}, 'x');
    once.clear('k');
    once.log('warn', 'k', {}, 'x');
    expect(lines).toHaveLength(2);
  });

  it('remembers a bounded number of keys', () => {
    const { lines, logger } = fakeLogger();
    const once = new LogOnce(logger, 60_000, () => 0, 3);
    for (const k of ['a', 'b', 'c', 'd', 'a']) once.log('warn', k, {}, 'x');
    // 'a' was forgotten to make room for 'd', so it logs again
    expect(lines).toHaveLength(5);
  });
});

describe("a background loop's failures", () => {
  it('counts every failure and logs one line per key per interval, with the wait and the error', () => {
    let now = 0;
    const { lines, logger } = fakeLogger();
    const counted: string[] = [];
    const failures = new LoopFailures(new LogOnce(logger, 60_000, () => now), { inc: ({ loop }) => void counted.push(loop) });
    for (let i = 0; i < 50; i++)
      failures.report('lane', new Error('database is locked'), 'lane failed', { key: 'lane:a', fields: { shopId: 'a' }, retryInMs: 1000 });
    failures.report('lane', 'not an Error', 'lane failed', { key: 'lane:b', level: 'warn' });
    expect(counted).toHaveLength(51);
    expect(counted.every((l) => l === 'lane')).toBe(true);
    expect(lines).toEqual([
      { level: 'error', fields: { shopId: 'a', err: 'database is locked', retryInMs: 1000 }, msg: 'lane failed' },
      { level: 'warn', fields: { err: 'not an Error' }, msg: 'lane failed' },
    ]);
    now = 60_000;
    failures.report('lane', new Error('database is locked'), 'lane failed', { key: 'lane:a', retryInMs: 2000 });
    expect(lines[2]!.fields).toEqual({ err: 'database is locked', retryInMs: 2000, repeated: 49 });
  });

  it('keys by the loop when no key is given', () => {
    const { lines, logger } = fakeLogger();
    const failures = new LoopFailures(new LogOnce(logger, 60_000, () => 0));
    failures.report('stage2', new Error('x'), 'drain failed');
    failures.report('stage2', new Error('x'), 'drain failed');
    failures.report('worker_pass', new Error('x'), 'pass failed');
    expect(lines.map((l) => l.msg)).toEqual(['drain failed', 'pass failed']);
  });
});
