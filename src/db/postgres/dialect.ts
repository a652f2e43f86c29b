// PostgreSQL's side of the Dialect (db/dialect.ts).
import type { Dialect } from '../dialect';

export const POSTGRES: Dialect = {
  name: 'postgres',
  greatest: (a, b) => `GREATEST(${a}, ${b})`,
  skipLocked: (of) => `FOR UPDATE${of ? ` OF ${of}` : ''} SKIP LOCKED`,
  lockRows: () => 'FOR UPDATE',
  inList: (column, param) => `${column} = ANY(${param('text[]')})`,
  listParam: (values) => values,
  rowsOf: (columns, param) => `SELECT ${columns.map((c, i) => `unnest(${param(i + 1, `${c.type}[]`)}) AS "${c.name}"`).join(', ')}`,
  rowsParams: (rows) => (rows[0] ?? []).map((_, i) => rows.map((r) => r[i])),
  epochHour: (column) => `(EXTRACT(EPOCH FROM ${column}) * 1000)::bigint / 3600000`,
  value: (v) => v ?? null,
  updateInWith: true,
  sharesRoundTrips: true,
};
