// SQLite's side of the Dialect (db/dialect.ts). Timestamps are stored as epoch milliseconds.
import type { Dialect } from '../dialect';

export const SQLITE: Dialect = {
  name: 'sqlite',
  greatest: (a, b) => `MAX(${a}, ${b})`,
  skipLocked: () => '',
  lockRows: () => '',
  inList: (column, param) => `${column} IN (SELECT "value" FROM json_each(${param()}))`,
  listParam: (values) => JSON.stringify(values),
  rowsOf: (columns, param) =>
    `SELECT ${columns.map((c, i) => `json_extract("value", '$[${i}]') AS "${c.name}"`).join(', ')} FROM json_each(${param(1)})`,
  rowsParams: (rows) => [JSON.stringify(rows)],
  epochHour: (column) => `${column} / 3600000`,
  value: (v) => (v instanceof Date ? v.getTime() : (v ?? null)),
  updateInWith: false,
  sharesRoundTrips: false,
};
