// The set-based SQL helpers of stage 2 (src/db/batch-sql.ts): the condition they build, and the
// guard that keeps an empty one from reaching the database.
import { hasShopKeys, setColumns, whereShopKeys } from '../../src/db/batch-sql';

describe('batch SQL helpers', () => {
  it('whereShopKeys: one term per shop with keys, its ids bound as parameters', () => {
    const sql = whereShopKeys(
      new Map<string, Iterable<string>>([
        ['s1', ['a', 'b']],
        ['s2', []],
        ['s3', new Set(['c'])],
      ]),
      'clientId',
    );
    expect(sql.sql).toBe('("shopId" = ? AND "clientId" IN (?,?)) OR ("shopId" = ? AND "clientId" IN (?))');
    expect(sql.values).toEqual(['s1', 'a', 'b', 's3', 'c']);
  });

  it('hasShopKeys: false when no shop has a key, whatever the number of shops', () => {
    expect(hasShopKeys(new Map())).toBe(false);
    expect(
      hasShopKeys(
        new Map<string, Set<string> | string[]>([
          ['s1', new Set<string>()],
          ['s2', []],
        ]),
      ),
    ).toBe(false);
    expect(
      hasShopKeys(
        new Map<string, Set<string> | string[]>([
          ['s1', new Set<string>()],
          ['s2', ['x']],
        ]),
      ),
    ).toBe(true);
  });

  it('setColumns: dates as SQLite stores them (epoch ms), as they are on PostgreSQL, undefined as NULL', () => {
    const at = new Date('2026-01-02T03:04:05.678Z');
    expect(setColumns('sqlite', { runAt: at, email: undefined }).values).toEqual([at.getTime(), null]);
    expect(setColumns('postgres', { runAt: at }).values).toEqual([at]);
    expect(setColumns('sqlite', { runAt: at, email: 'x' }).sql).toBe('"runAt" = ?,"email" = ?');
  });
});
