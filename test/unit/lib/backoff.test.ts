import { Backoff, backoffDelayMs, SHOP_BACKOFF } from '../../../src/lib/backoff';

describe('failure backoff', () => {
  it('doubles from the base to the cap, each wait within the jitter', () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4, 9, 10, 40].map((n) => backoffDelayMs(n, SHOP_BACKOFF, mid))).toEqual([
      1_000, 2_000, 4_000, 8_000, 256_000, 300_000, 300_000,
    ]);
    for (let n = 1; n < 12; n++) {
      const exp = Math.min(300_000, 1_000 * 2 ** (n - 1));
      expect(backoffDelayMs(n, SHOP_BACKOFF, () => 0)).toBe(Math.round(exp * 0.8));
      expect(backoffDelayMs(n, SHOP_BACKOFF, () => 1)).toBe(Math.round(exp * 1.2));
    }
  });

  it('keeps keys apart and forgets a key at its first success', () => {
    let now = 0;
    const b = new Backoff<string>(
      SHOP_BACKOFF,
      () => now,
      () => 0.5,
    );
    expect(b.fail('a')).toBe(1_000);
    expect(b.fail('a')).toBe(2_000);
    expect(b.fail('b')).toBe(1_000);
    expect(b.until('a')).toBe(2_000);
    now = 5_000;
    b.succeed('a');
    expect(b.failures('a')).toBe(0);
    expect(b.until('a')).toBe(0);
    expect(b.fail('a')).toBe(1_000);
    expect(b.failures('b')).toBe(1);
  });
});
