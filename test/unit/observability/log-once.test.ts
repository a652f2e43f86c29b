import { LogOnce } from '../../../src/observability/log-once';
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
