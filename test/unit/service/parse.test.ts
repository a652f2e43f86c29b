// Pure readers of service responses.
import { extractArray, parseRateInfo, parseRetryAfterMs } from '../../../src/integrations/service/parse';
import { redactSecret } from '../../../src/integrations/service/errors';

describe('parseRateInfo', () => {
  it('reads plain and structured values, and ignores junk', () => {
    expect(parseRateInfo({ 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '0' })).toEqual({ limit: 10, remaining: 0 });
    expect(parseRateInfo({ 'x-ratelimit-limit': '10, 10;w=1', 'x-ratelimit-remaining': ['4', '5'] })).toEqual({ limit: 10, remaining: 4 });
    expect(parseRateInfo({ 'x-ratelimit-limit': 'many' })).toEqual({});
    expect(parseRateInfo({})).toEqual({});
  });
});

describe('parseRetryAfterMs', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it('prefers Retry-After, then retry-after-ms, then reset headers', () => {
    expect(parseRetryAfterMs({ 'retry-after': '2', 'x-ratelimit-reset': '9' }, now)).toBe(2000);
    expect(parseRetryAfterMs({ 'retry-after-ms': '150' }, now)).toBe(150);
    expect(parseRetryAfterMs({ 'ratelimit-reset': '4' }, now)).toBe(4000);
    expect(parseRetryAfterMs({ 'x-ratelimit-reset': String(now + 700) }, now)).toBe(700);
  });
  it('an HTTP-date in the past is 0; garbage is undefined', () => {
    expect(parseRetryAfterMs({ 'retry-after': 'Wed, 31 Dec 2025 23:59:00 GMT' }, now)).toBe(0);
    expect(parseRetryAfterMs({ 'retry-after': 'soon' }, now)).toBeUndefined();
    expect(parseRetryAfterMs({}, now)).toBeUndefined();
  });
});

describe('extractArray', () => {
  it('finds the array, or gives up', () => {
    expect(extractArray({ custom_fields: [1] })).toEqual([1]);
    expect(extractArray({ data: { items: [2] } })).toEqual([2]);
    expect(extractArray({ data: 'x' })).toBeUndefined();
    expect(extractArray('x')).toBeUndefined();
  });
});

describe('redactSecret', () => {
  it('removes every occurrence and caps the length', () => {
    expect(redactSecret('a sk_123456 b sk_123456', 'sk_123456')).toBe('a [redacted] b [redacted]');
    expect(redactSecret('x'.repeat(900), 'sk_123456')).toHaveLength(500);
  });
});
