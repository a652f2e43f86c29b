// Set-based SQL for stage 2's batches, raw rather than through the ORM: multi-row INSERTs in the
// caller's transaction, and reads keyed by (shop, id) lists. Prisma's createMany and findMany run
// every row and every list item through its query compiler, a cost that grows with the batch; a
// raw statement pays Prisma's per-query cost once, whatever its rows.
import { Prisma } from '@prisma/client';
import type { DbProvider } from './client';
import type { SqlTx } from './transaction';

type Tx = Pick<SqlTx, '$executeRaw'>;

/** Rows per statement: far below either database's parameter limit (SQLite 32,766, PostgreSQL 65,535). */
const ROWS_PER_STATEMENT = 500;

/** A Date as the provider stores it (epoch ms on SQLite, see client.ts), undefined as NULL. */
function columnValue(provider: DbProvider, v: unknown): unknown {
  return v === undefined ? null : v instanceof Date && provider === 'sqlite' ? v.getTime() : v;
}

/** `"a" = ?, "b" = ?` for an UPDATE's SET, from a row's columns (values as insertRows writes them). */
export function setColumns(provider: DbProvider, row: object): Prisma.Sql {
  return Prisma.join(Object.entries(row).map(([c, v]) => Prisma.sql`${Prisma.raw(`"${c}"`)} = ${columnValue(provider, v)}`));
}

/**
 * Inserts rows into `table` (columns named as in the schema). Every row must name the same
 * columns; a Date is written as the provider stores it (epoch ms on SQLite, see client.ts), and
 * undefined as NULL. Columns the rows leave out take their database default, so a table whose
 * Prisma model fills a column itself (`@updatedAt`, `@default(now())`) needs it given here.
 * Returns how many rows were inserted.
 */
export async function insertRows(tx: Tx, provider: DbProvider, table: string, rows: ReadonlyArray<object>): Promise<number> {
  if (rows.length === 0) return 0;
  const columns = Object.keys(rows[0]!);
  const head = Prisma.raw(`INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES `);
  let inserted = 0;
  for (let from = 0; from < rows.length; from += ROWS_PER_STATEMENT) {
    const values = rows.slice(from, from + ROWS_PER_STATEMENT).map((row: object) => {
      if (Object.keys(row).length !== columns.length) throw new Error(`insertRows(${table}): every row must name the same columns`);
      return Prisma.sql`(${Prisma.join(columns.map((c) => columnValue(provider, (row as Record<string, unknown>)[c])))})`;
    });
    inserted += await tx.$executeRaw(Prisma.sql`${head}${Prisma.join(values)}`);
  }
  return inserted;
}

/** Whether any shop has a key: whereShopKeys of none is no condition at all. */
export function hasShopKeys(keys: ReadonlyMap<string, { size: number } | unknown[]>): boolean {
  for (const ids of keys.values()) if ((Array.isArray(ids) ? ids.length : ids.size) > 0) return true;
  return false;
}

/**
 * `("shopId" = a AND column IN (...)) OR ...`: one term per shop with keys, each served by a
 * (shopId, column) index, so a batch of many shops reads in one statement. Callers skip the
 * query when no shop has keys (hasShopKeys; an empty condition is not valid SQL).
 */
export function whereShopKeys(keys: ReadonlyMap<string, Iterable<string>>, column: string): Prisma.Sql {
  const col = Prisma.raw(`"${column}"`);
  const terms: Prisma.Sql[] = [];
  for (const [shopId, ids] of keys) {
    const list = [...ids];
    if (list.length) terms.push(Prisma.sql`("shopId" = ${shopId} AND ${col} IN (${Prisma.join(list)}))`);
  }
  return Prisma.join(terms, ' OR ');
}
