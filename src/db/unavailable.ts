// Whether an error says the database is away (a restart, a dropped connection, a full pool,
// SQLite's busy lock) rather than refusing this statement's content. A loop waits out the first
// kind and tries again; only the second kind may mark a record as failed for good.

const PG_UNAVAILABLE_CLASSES = ['08', '57P', '53'];
const NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
]);
// Prisma's codes for reaching the database and its pool
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1011', 'P1017', 'P2024']);
const MESSAGES = [
  /connection terminated/i,
  /terminating connection/i,
  /connection (is )?closed/i,
  /database is locked/i,
  /the database system is (starting up|shutting down|in recovery mode)/i,
  /timeout exceeded when trying to connect/i,
  /too many clients/i,
  /ECONNREFUSED|ECONNRESET/,
];

export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 5) return false;
  const e = err as { code?: unknown; originalCode?: unknown; message?: unknown; cause?: unknown; meta?: unknown };
  for (const code of [e.code, e.originalCode]) {
    if (typeof code !== 'string') continue;
    if (NODE_CODES.has(code) || PRISMA_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code) && PG_UNAVAILABLE_CLASSES.some((c) => code.startsWith(c))) return true;
  }
  if (typeof e.message === 'string' && MESSAGES.some((m) => m.test(e.message as string))) return true;
  return isDatabaseUnavailable(e.cause, depth + 1) || isDatabaseUnavailable(e.meta, depth + 1);
}
