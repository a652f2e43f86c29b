// What differs between the two databases, in one interface: the few SQL fragments and
// capabilities the rest of the code needs, each written once per database under db/sqlite and
// db/postgres. Code outside src/db asks the dialect and never branches on the provider itself
// (test/unit/architecture.test.ts holds it to that).
import type { DbProvider } from './client';

export interface Dialect {
  readonly name: DbProvider;
  /** The larger of two values: GREATEST on PostgreSQL, the scalar MAX on SQLite. */
  greatest(a: string, b: string): string;
  /**
   * Rows a claim skips when another transaction holds them (PostgreSQL's FOR UPDATE ... SKIP
   * LOCKED, of `of` when given); nothing on SQLite, where the one writer holds the whole database.
   */
  skipLocked(of?: string): string;
  /**
   * The rows a read-merge-write reads stay locked until the transaction ends (PostgreSQL's FOR
   * UPDATE); nothing on SQLite, where the transaction holds the one writer.
   */
  lockRows(): string;
  /** `column` is one of a list of texts given as one parameter (`param`, see listParam). */
  inList(column: string, param: (pgType?: string) => string): string;
  /** The parameter value of such a list. */
  listParam(values: string[]): unknown;
  /**
   * A relation of rows given as parameters, one per column (`param(i)` for the i-th, see
   * rowsParams), with the columns named as given: unnest of arrays on PostgreSQL, json_each of one
   * JSON array of rows on SQLite. Usable in a FROM.
   */
  rowsOf(columns: Array<{ name: string; type: 'text' | 'timestamp' }>, param: (i: number, pgType?: string) => string): string;
  /** The parameters of such a relation: one array per column (PostgreSQL), or one JSON text (SQLite). */
  rowsParams(rows: unknown[][]): unknown[];
  /** The whole hour (epoch ms / 3,600,000) of a timestamp column, as an integer. */
  epochHour(column: string): string;
  /** A value as a raw parameter of this database: a Date is epoch ms on SQLite. */
  value(v: unknown): unknown;
  /** Whether an UPDATE ... RETURNING may sit in a WITH, so one statement both writes and reads. */
  readonly updateInWith: boolean;
  /**
   * Whether concurrent callers' statements are worth sending together (a round trip each on
   * PostgreSQL); SQLite runs each in process, where a statement costs no round trip.
   */
  readonly sharesRoundTrips: boolean;
}
