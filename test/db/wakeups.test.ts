// Wake-ups between processes on PostgreSQL: a stream of commits (the intake at line rate)
// sends other processes a NOTIFY every few milliseconds rather than one per commit, and never
// leaves the last commit without a NOTIFY after it.
import pg from 'pg';
import { createLogger } from '../../src/observability/logger';
import { createWakeups, type Wakeups } from '../../src/db/wakeups';
import { createTestDatabase, testProvider, type TestDatabase } from '../helpers/db';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const pgOnly = testProvider === 'postgres' ? describe : describe.skip;
pgOnly('wake-ups between processes (PostgreSQL NOTIFY)', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let listener: pg.Client;
  let publisher: Wakeups;
  /** When each NOTIFY on the receipts channel reached the other connection. */
  const got: number[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    publisher = createWakeups({ logger: createLogger('silent'), pg: { pool, connectionString: database.url }, notifyGapMs: 50 });
    listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    listener.on('notification', (n) => {
      if (n.channel === 'connector_receipts') got.push(Date.now());
    });
    await listener.query('LISTEN connector_receipts');
  });
  afterAll(async () => {
    await publisher.close();
    await listener.end();
    await pool.end();
    await database.drop();
  });

  const until = async (cond: () => boolean, ms: number) => {
    const end = Date.now() + ms;
    while (!cond() && Date.now() < end) await sleep(2);
    return cond();
  };

  it('notifies at once after a quiet spell', async () => {
    // a publisher whose gap is ten minutes: a first NOTIFY that waited for it would not come
    // within the wait below, on any machine
    const patient = createWakeups({ logger: createLogger('silent'), pg: { pool, connectionString: database.url }, notifyGapMs: 600_000 });
    try {
      patient.publish('receipts');
      expect(await until(() => got.length === 1, 10_000)).toBe(true);
    } finally {
      await patient.close();
    }
  });

  it('a stream of commits sends a NOTIFY per gap, and the last one after the last commit', async () => {
    await sleep(100);
    got.length = 0;
    const started = Date.now();
    for (let i = 0; i < 100; i++) {
      publisher.publish('receipts');
      await sleep(2);
    }
    const lastPublish = Date.now();
    // the NOTIFY at the end of the last gap, however loaded the machine (up to 2 s)
    for (let waited = 0; waited < 2_000 && !(got.length && got[got.length - 1]! >= lastPublish); waited += 10) await sleep(10);
    await sleep(60);
    const gaps = Math.ceil((lastPublish - started) / 50);
    // one per commit before: ~100
    expect(got.length).toBeGreaterThanOrEqual(2);
    expect(got.length).toBeLessThanOrEqual(gaps + 2);
    // the commits at the end of the stream are not left to the other processes' safety poll
    expect(got[got.length - 1]!).toBeGreaterThanOrEqual(lastPublish);
  });
});
