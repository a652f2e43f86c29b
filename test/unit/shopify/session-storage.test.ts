import type { Db } from '../../../src/db/client';
import { createSessionStore } from '../../../src/integrations/shopify/session-storage';

describe('session store start-up check', () => {
  it('does not wait or crash when the table check fails at construction, and re-checks on first use', async () => {
    const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    const count = jest.fn().mockRejectedValueOnce(new Error('database starting')).mockResolvedValue(0);
    const findUnique = jest.fn().mockResolvedValue(null);
    const db = { session: { count, findUnique } } as unknown as Db;
    // on jest's clock, which only the test moves and here never forward: the library's retries are
    // set to no wait at all (a 0-ms timer), and a store that waited longer would never answer
    jest.useFakeTimers();
    try {
      const store = createSessionStore(db);
      let answer: unknown = 'none yet';
      const loading = store.loadSession('offline_x.myshopify.com').then((v) => (answer = v));
      for (let i = 0; i < 20 && answer === 'none yet'; i++) await jest.advanceTimersByTimeAsync(0);
      expect(answer).toBeUndefined();
      await loading;
    } finally {
      jest.useRealTimers();
    }
    expect(count).toHaveBeenCalledTimes(2);
    expect(findUnique).toHaveBeenCalledTimes(1);
    log.mockRestore();
  });

  it('says clearly when the Session table is missing', async () => {
    const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    const db = { session: { count: jest.fn().mockRejectedValue(new Error('no such table')) } } as unknown as Db;
    await expect(createSessionStore(db).loadSession('x')).rejects.toThrow(/Session table is missing/);
    log.mockRestore();
  });

  it('wants both encrypt and decrypt, or neither', () => {
    expect(() => createSessionStore({} as Db, { encrypt: (s) => s })).toThrow(/both/);
  });
});
