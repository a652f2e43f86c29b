// The CustomerProfile rows (what Shopify told the app about each customer, src/mapping/profile.ts),
// read set-based and written by read-merge-write: stage 2 and the historical import both write
// them, each from what it read a moment before, so a write merges with the row as it is at commit
// (locked on PostgreSQL; SQLite's transaction holds the one writer) and never loses the other's
// newer facts. The merge itself is the caller's (a pure function of the mapping layer).
import { Prisma } from '@prisma/client';
import type { DbProvider } from './client';
import { dialectOf } from './dialects';
import { hasShopKeys, whereShopKeys } from './batch-sql';
import type { SqlTx } from './transaction';

export interface ProfileRow {
  shopId: string;
  customerId: string;
  /** The current address (normalised), for matching by email. */
  email: string | null;
  /** The facts, as JSON. */
  data: string;
  digest: string | null;
}

type Tx = Pick<SqlTx, '$queryRaw' | '$executeRaw'>;

const ROWS_PER_STATEMENT = 200;
const key = (r: { shopId: string; customerId: string }) => `${r.shopId}\u0000${r.customerId}`;

/** The rows of these customers (shop id → customer ids); `lock`: held until the transaction ends. */
export async function readProfileRows(
  tx: Tx,
  provider: DbProvider,
  customers: ReadonlyMap<string, Iterable<string>>,
  lock = false,
): Promise<ProfileRow[]> {
  if (!hasShopKeys(customers as ReadonlyMap<string, string[]>)) return [];
  const suffix = lock ? Prisma.raw(` ${dialectOf(provider).lockRows()}`) : Prisma.empty;
  return tx.$queryRaw<ProfileRow[]>(
    Prisma.sql`SELECT "shopId", "customerId", "email", "data", "digest" FROM "CustomerProfile" WHERE ${whereShopKeys(customers, 'customerId')}${suffix}`,
  );
}

function byShop(rows: ReadonlyArray<{ shopId: string; customerId: string }>): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const r of rows) m.set(r.shopId, [...(m.get(r.shopId) ?? []), r.customerId]);
  return m;
}

/**
 * Stores each profile over the row as it is now: `merge(current, next)` decides what is written
 * (current null: no row yet). A row another transaction inserted after the read is merged too.
 */
export async function mergeProfileRows(
  tx: Tx,
  provider: DbProvider,
  rows: readonly ProfileRow[],
  merge: (current: ProfileRow | null, next: ProfileRow) => ProfileRow,
  now: Date,
): Promise<void> {
  if (rows.length === 0) return;
  const at = provider === 'sqlite' ? now.getTime() : now;
  const values = (list: readonly ProfileRow[]) =>
    Prisma.join(list.map((r) => Prisma.sql`(${r.shopId}, ${r.customerId}, ${r.email}, ${r.data}, ${r.digest}, ${at})`));
  const head = Prisma.sql`INSERT INTO "CustomerProfile" ("shopId", "customerId", "email", "data", "digest", "updatedAt") VALUES `;
  let pending = [...rows];
  for (let round = 0; pending.length > 0; round++) {
    const current = new Map((await readProfileRows(tx, provider, byShop(pending), true)).map((r) => [key(r), r]));
    const merged = pending.map((r) => merge(current.get(key(r)) ?? null, r));
    const existing = merged.filter((r) => current.has(key(r)));
    const fresh = merged.filter((r) => !current.has(key(r)));
    for (let i = 0; i < existing.length; i += ROWS_PER_STATEMENT) {
      await tx.$executeRaw(Prisma.sql`${head}${values(existing.slice(i, i + ROWS_PER_STATEMENT))}
        ON CONFLICT ("shopId", "customerId") DO UPDATE SET "email" = excluded."email", "data" = excluded."data",
          "digest" = excluded."digest", "updatedAt" = excluded."updatedAt"`);
    }
    const inserted = new Set<string>();
    for (let i = 0; i < fresh.length; i += ROWS_PER_STATEMENT) {
      const done = await tx.$queryRaw<Array<{ shopId: string; customerId: string }>>(Prisma.sql`${head}${values(
        fresh.slice(i, i + ROWS_PER_STATEMENT),
      )}
        ON CONFLICT ("shopId", "customerId") DO NOTHING RETURNING "shopId", "customerId"`);
      for (const r of done) inserted.add(key(r));
    }
    // rows another transaction inserted since the read: merged with theirs on the next round
    const raced = new Set(fresh.filter((r) => !inserted.has(key(r))).map(key));
    pending = rows.filter((r) => raced.has(key(r)));
    if (round > 2 && pending.length) throw new Error('customer profiles kept changing under the write');
  }
}
