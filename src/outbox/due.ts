// The queue of queues. One ShopDue row per shop with queued work; dueAt is a lower bound of the
// shop's earliest queued runAt. The worker finds shops with DUE work through the dueAt index,
// oldest first, so a shop whose messages lie in the future costs nothing, whatever the number
// of shops. Rules that keep it exact without locks:
// - every writer that queues a message lowers dueAt (never raises it) and bumps `version`;
// - only the lane that drained a shop raises it, with an UPDATE fenced on the version it read
//   before computing the new value: a concurrent insert changes the version, the fence fails,
//   and the lane looks again. A missed lowering is found by the slow reconcile (and logged).
import { Prisma } from '@prisma/client';
import { rawOf, type Db, type DbProvider } from '../db/client';
import { dialectOf } from '../db/dialects';
import { perRowCall } from '../db/group-commit';
import { perRow, prepare, rawDate, rawTimestamp, runRows, type RawStatement, type StatementBuilder } from '../db/raw';
import type { SqlTx } from '../db/transaction';
import { Sql } from '../db/sql';

// the app's client, a Prisma transaction or a driver transaction (db/transaction.ts): all fit
type Client = Pick<SqlTx, '$executeRaw'>;

export interface DueEntry {
  shopId: string;
  runAt: Date;
}

/** Lowers each shop's due time to its earliest runAt given (inserting the row if absent). */
export async function lowerDue(client: Client, provider: DbProvider, entries: DueEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const earliest = new Map<string, Date>();
  for (const e of entries) {
    const prev = earliest.get(e.shopId);
    if (!prev || e.runAt < prev) earliest.set(e.shopId, e.runAt);
  }
  const sql = new Sql(client as Db, provider);
  // one row per shop: PostgreSQL refuses to update a row twice in one statement
  const values = [...earliest].map(([shopId, runAt]) => Prisma.sql`(${shopId}, ${sql.ts(runAt)}, 1)`);
  await client.$executeRaw(Prisma.sql`
    INSERT INTO "ShopDue" ("shopId", "dueAt", "version") VALUES ${Prisma.join(values)}
    ON CONFLICT ("shopId") DO UPDATE SET
      "dueAt" = CASE WHEN "ShopDue"."dueAt" IS NULL OR excluded."dueAt" < "ShopDue"."dueAt" THEN excluded."dueAt" ELSE "ShopDue"."dueAt" END,
      "version" = "ShopDue"."version" + 1`);
}

// Parameters: 1 worker, 2 leased until, 3 now, 4 limit. Served by the dueAt index.
const LEASE: StatementBuilder = (p, d) => `
  UPDATE "ShopDue" SET "leasedBy" = ${p(1)}, "leasedUntil" = ${p(2, 'timestamp')}
  WHERE "shopId" IN (
    SELECT "shopId" FROM "ShopDue"
    WHERE "dueAt" <= ${p(3, 'timestamp')} AND ("leasedUntil" IS NULL OR "leasedUntil" < ${p(3, 'timestamp')})
    ORDER BY "dueAt" LIMIT ${p(4, 'integer')} ${d.skipLocked()}
  ) RETURNING "shopId"`;
// Parameter 1: now.
const NEXT_WAKE: StatementBuilder = (p) => `
  SELECT (SELECT MIN("dueAt") FROM "ShopDue" WHERE "dueAt" > ${p(1, 'timestamp')}) AS "future",
         (SELECT MIN("leasedUntil") FROM "ShopDue" WHERE "dueAt" <= ${p(1, 'timestamp')} AND "leasedUntil" > ${p(1, 'timestamp')}) AS "lease"`;
// A lane's end, in one statement: the shop's due time becomes its earliest queued runAt (one
// index probe per delivery class), no sooner than parameter 3 (a pause, a backoff, or now for a
// shop that used its turn), and the lease is given up. Fenced on the version as the statement's
// snapshot saw it: on PostgreSQL a writer that lowered the due time after that snapshot changed
// the version, so the row no longer matches and no row comes back (the lane looks again); on
// SQLite the statement holds the only write lock. Parameters: 1 shop, 2 worker, 3 not before.
// Per row: on PostgreSQL the ends of concurrent lanes go in one statement (Coalescer).
const RELEASE = perRow(
  (c, rows) => `
  UPDATE "ShopDue" SET "leasedBy" = NULL, "leasedUntil" = NULL, "dueAt" = (
    SELECT CASE WHEN MIN("m") IS NOT NULL AND ${c(3, 'timestamp')} IS NOT NULL AND ${c(3, 'timestamp')} > MIN("m") THEN ${c(3, 'timestamp')} ELSE MIN("m") END
    FROM (${[0, 1, 2, 3]
      .map(
        (k) =>
          `SELECT MIN("runAt") AS "m" FROM "OutboxMessage" WHERE "status" = 'queued' AND "shopId" = ${c(1)} AND "deliveryClass" = ${k}`,
      )
      .join(' UNION ALL ')}) AS "classes")
  ${rows ? `FROM ${rows}` : ''}
  WHERE "ShopDue"."shopId" = ${c(1)} AND "leasedBy" = ${c(2)} AND "version" = (SELECT "x"."version" FROM "ShopDue" AS "x" WHERE "x"."shopId" = ${c(1)})
  RETURNING "ShopDue"."shopId", "dueAt"`,
);
// Whether the shop's row is still there and leased by this worker (after a release that matched nothing).
const LEASED_BY: StatementBuilder = (p) => `SELECT 1 AS "leased" FROM "ShopDue" WHERE "shopId" = ${p(1)} AND "leasedBy" = ${p(2)}`;

/** A shop leased for a lane, with the row a LeaseRead joined to it (PostgreSQL) when one was asked for. */
export interface LeasedShop<R> {
  shopId: string;
  row?: R;
}

/**
 * What a lease also reads for each shop it leased, in the same statement on PostgreSQL (a
 * data-modifying WITH): `select(leased)` is a SELECT over the relation `leased`, whose column
 * "shopId" holds the leased shops; its rows must carry "shopId". On SQLite, whose UPDATE cannot
 * sit in a WITH, nothing is read (the row is absent) and the caller reads it itself, in process.
 */
export interface LeaseRead {
  /** The prepared statement's name, unique among the process's statements. */
  name: string;
  select: (leased: string) => string;
}

export class ShopQueue {
  private readonly sql: Sql;
  private readonly leaseStatement: RawStatement<{ shopId: string }>;
  private readonly nextWakeStatement: RawStatement<{ future: unknown; lease: unknown }>;
  private readonly releaseStatement: RawStatement<{ shopId: string; dueAt: unknown }>;
  /** A lane's end: on PostgreSQL those of concurrent lanes share one statement. */
  private readonly releaseOne: (row: [string, string, unknown]) => Promise<{ dueAt: unknown } | undefined>;
  private readonly leasedByStatement: RawStatement<{ leased: number }>;
  private readonly readingLeases = new Map<string, RawStatement<{ shopId: string }>>();

  constructor(
    private readonly db: Db,
    readonly provider: DbProvider,
  ) {
    this.sql = new Sql(db, provider);
    this.leaseStatement = prepare(rawOf(db), 'due_lease', LEASE, { lazyCommit: true });
    this.nextWakeStatement = prepare(rawOf(db), 'due_next_wake', NEXT_WAKE);
    this.releaseStatement = prepare(rawOf(db), 'due_release', RELEASE, { lazyCommit: true });
    this.releaseOne = perRowCall(provider, { key: ([shopId]) => shopId, run: (rows) => this.runReleases(rows) });
    this.leasedByStatement = prepare(rawOf(db), 'due_leased_by', LEASED_BY);
  }

  lower(entries: DueEntry[]): Promise<void> {
    return lowerDue(this.db, this.provider, entries);
  }

  /**
   * Leases up to `limit` shops with due work that no live lane has leased, oldest due first; with
   * `read`, also what it reads for them (one round trip, not one more per lane, on PostgreSQL).
   */
  async lease<R extends { shopId: string } = never>(
    workerId: string,
    limit: number,
    now: Date,
    leaseMs: number,
    read?: LeaseRead,
  ): Promise<Array<LeasedShop<R>>> {
    if (limit <= 0) return [];
    const params = [workerId, rawTimestamp(this.provider, new Date(now.getTime() + leaseMs)), rawTimestamp(this.provider, now), limit];
    if (read && dialectOf(this.provider).updateInWith) {
      let statement = this.readingLeases.get(read.name);
      if (!statement) {
        statement = prepare(rawOf(this.db), read.name, (p, d) => `WITH "leased" AS (${LEASE(p, d)}) ${read.select('"leased"')}`, {
          lazyCommit: true,
        });
        this.readingLeases.set(read.name, statement);
      }
      return (await statement.run(params)).map((row) => ({ shopId: row.shopId, row: row as R }));
    }
    return (await this.leaseStatement.run(params)).map((r) => ({ shopId: r.shopId }));
  }

  /** Keeps a lane's lease while it works. */
  async renew(shopId: string, workerId: string, until: Date): Promise<boolean> {
    const res = await this.db.shopDue.updateMany({ where: { shopId, leasedBy: workerId }, data: { leasedUntil: until } });
    return res.count === 1;
  }

  /**
   * Ends a lane: sets the shop's due time from what is still queued (no sooner than `notBefore`:
   * a workspace pause, or now for a shop that used its turn) and releases the lease. Fenced on
   * the version, so work queued meanwhile is never hidden. Returns the new due time (null:
   * nothing queued, or the shop is not leased by this worker).
   */
  async release(shopId: string, workerId: string, notBefore?: Date): Promise<Date | null> {
    const after = notBefore ? rawTimestamp(this.provider, notBefore) : null;
    for (let round = 0; round < 5; round++) {
      const done = await this.releaseOne([shopId, workerId, after]);
      if (done) return rawDate(done.dueAt);
      // no row: the version moved under us (look again), or the shop is not ours (any more)
      if ((await this.leasedByStatement.run([shopId, workerId])).length === 0) return null;
    }
    // still changing under us: leave the (lower) due time as it is, only give the lease up
    await this.db.shopDue.updateMany({ where: { shopId, leasedBy: workerId }, data: { leasedBy: null, leasedUntil: null } });
    return new Date(0);
  }

  private async runReleases(rows: Array<[string, string, unknown]>): Promise<Array<{ dueAt: unknown } | undefined>> {
    const done = new Map((await runRows(this.releaseStatement, this.provider, rows)).map((r) => [r.shopId, r]));
    return rows.map(([shopId]) => done.get(shopId));
  }

  /**
   * When the worker must look again: the earliest future due time, or an expiring lease. (Raw
   * SQL: Prisma's aggregate over a DateTime column reads SQLite's epoch-ms values as invalid dates.)
   */
  async nextWake(now: Date): Promise<Date | null> {
    const row = (await this.nextWakeStatement.run([rawTimestamp(this.provider, now)]))[0];
    const times = [rawDate(row?.future), rawDate(row?.lease)].filter((d): d is Date => d !== null);
    return times.length ? new Date(Math.min(...times.map((d) => d.getTime()))) : null;
  }

  /**
   * The slow safety net: lowers the due time of any shop whose queued work is not indexed.
   * Every writer lowers it itself, so anything found here is a missed wake-up (logged).
   */
  async reconcile(): Promise<string[]> {
    const rows = await this.sql.query<{ shopId: string }>(Prisma.sql`
      INSERT INTO "ShopDue" ("shopId", "dueAt", "version")
      SELECT "shopId", MIN("runAt"), 1 FROM "OutboxMessage" WHERE "status" = 'queued' GROUP BY "shopId"
      ON CONFLICT ("shopId") DO UPDATE SET "dueAt" = excluded."dueAt", "version" = "ShopDue"."version" + 1
      WHERE "ShopDue"."dueAt" IS NULL OR excluded."dueAt" < "ShopDue"."dueAt"
      RETURNING "shopId"`);
    return rows.map((r) => r.shopId);
  }
}
