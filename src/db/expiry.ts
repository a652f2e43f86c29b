// Rows that carry an expiresAt are deleted once expired through that column's index: each DELETE
// takes the rows up to the `chunk`-th oldest expiry (rows that expire at the same instant go
// together), and the event loop turns between DELETEs (on SQLite a statement holds it until done).
// An idle table costs one indexed look-up, whatever its size.
import { inChunks } from './raw';

export interface ExpiringTable {
  /** The expiresAt of the row `skip` places after the oldest expired by `at`, if there is one. */
  edge(at: Date, skip: number): PromiseLike<{ expiresAt: Date } | null>;
  /** Deletes the rows expired by `at`. */
  deleteUpTo(at: Date): PromiseLike<{ count: number }>;
}

/** The two calls of a Prisma model delegate that an expiring table needs. */
export interface ExpiringDelegate {
  findFirst(args: {
    where: { expiresAt: { lte: Date } };
    orderBy: { expiresAt: 'asc' };
    skip: number;
    select: { expiresAt: true };
  }): PromiseLike<{ expiresAt: Date } | null>;
  deleteMany(args: { where: { expiresAt: { lte: Date } } }): PromiseLike<{ count: number }>;
}

/** A model whose rows simply go when expired. */
export function expiringTable(model: ExpiringDelegate): ExpiringTable {
  return {
    edge: (at, skip) =>
      model.findFirst({ where: { expiresAt: { lte: at } }, orderBy: { expiresAt: 'asc' }, skip, select: { expiresAt: true } }),
    deleteUpTo: (at) => model.deleteMany({ where: { expiresAt: { lte: at } } }),
  };
}

/** Deletes the rows of `table` expired by `at`, about `chunk` per DELETE; returns how many. */
export function deleteExpired(table: ExpiringTable, at: Date, chunk: number): Promise<number> {
  const skip = Math.max(1, chunk) - 1;
  return inChunks(async () => {
    const edge = await table.edge(at, skip);
    const { count } = await table.deleteUpTo(edge ? edge.expiresAt : at);
    return { count, more: edge !== null };
  });
}
