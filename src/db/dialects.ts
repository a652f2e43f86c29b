// The dialect of each database (db/dialect.ts): SQLite's and PostgreSQL's, by provider.
import type { DbProvider } from './client';
import type { Dialect } from './dialect';
import { POSTGRES } from './postgres/dialect';
import { SQLITE } from './sqlite/dialect';

export function dialectOf(provider: DbProvider): Dialect {
  return provider === 'postgres' ? POSTGRES : SQLITE;
}
