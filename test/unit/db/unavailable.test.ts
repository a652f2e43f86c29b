import { isDatabaseUnavailable } from '../../../src/db/unavailable';

describe('telling the database away from a refused statement', () => {
  it.each([
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    [
      'PostgreSQL shutting down (57P01)',
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
    ],
    ['a broken connection (08006)', Object.assign(new Error('x'), { code: '08006' })],
    [
      'a wrapped cause',
      Object.assign(new Error('Invalid `prisma.x()` invocation'), {
        cause: { originalCode: '57P03', message: 'the database system is starting up' },
      }),
    ],
    ["Prisma's pool timeout", Object.assign(new Error('Timed out fetching a new connection'), { code: 'P2024' })],
    ['SQLite busy', Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })],
    ['pg after a restart', new Error('Connection terminated unexpectedly')],
  ])('%s is the database away', (_name, err) => {
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it.each([
    ['a unique violation', Object.assign(new Error('Unique constraint failed'), { code: 'P2002' })],
    ['invalid text for the column (22P05)', Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' })],
    ['a bug in our code', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['not an error', 'boom'],
  ])('%s is not', (_name, err) => {
    expect(isDatabaseUnavailable(err)).toBe(false);
  });
});
