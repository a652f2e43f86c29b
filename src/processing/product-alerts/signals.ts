// The ProductSignal rows: a restock or a price drop Shopify signalled for a variant, from its
// webhook (recorded once per webhook and variant) until the runner has queued every message it
// makes. A runner claims one for a while (lockedBy, lockedUntil), so several worker processes share
// the signals and a crashed one's claim runs out; a signal Shopify cannot be asked about now waits
// with a growing delay.
import { Prisma } from '@prisma/client';
import type { Db, DbProvider } from '../../db/client';
import { dialectOf } from '../../db/dialects';
import { rawDate } from '../../db/raw';
import { Sql } from '../../db/sql';

export type SignalKind = 'restock' | 'price_drop';

export interface NewSignal {
  shopId: string;
  kind: SignalKind;
  sourceId: string;
  productId: string;
  variantId: string;
  price?: number | null;
  previousPrice?: number | null;
  runAt: Date;
}

export interface Signal {
  id: number;
  shopId: string;
  kind: SignalKind;
  sourceId: string;
  productId: string;
  variantId: string;
  price: number | null;
  previousPrice: number | null;
  attempts: number;
  queued: number;
  createdAt: Date;
}

/** How long a claim lasts: a runner renews it with each chunk it commits. */
export const SIGNAL_CLAIM_MS = 60_000;
/** Done and dropped signals are kept this long, for the admin page's last sends, then deleted. */
export const SIGNAL_KEPT_MS = 7 * 86_400_000;

export class SignalStore {
  private readonly sql: Sql;

  constructor(
    private readonly db: Db,
    private readonly provider: DbProvider,
  ) {
    this.sql = new Sql(db, provider);
  }

  /** Records signals; a webhook delivered again records nothing more. Returns how many were new. */
  async record(signals: NewSignal[]): Promise<number> {
    let n = 0;
    for (const s of signals) {
      n += await this.db.$executeRaw(Prisma.sql`
        INSERT INTO "ProductSignal" ("shopId", "kind", "sourceId", "productId", "variantId", "price", "previousPrice", "state", "runAt", "createdAt", "updatedAt")
        VALUES (${s.shopId}, ${s.kind}, ${s.sourceId}, ${s.productId}, ${s.variantId}, ${s.price ?? null}, ${s.previousPrice ?? null},
          'pending', ${this.sql.ts(s.runAt)}, ${this.sql.ts(s.runAt)}, ${this.sql.ts(s.runAt)})
        ON CONFLICT ("shopId", "sourceId") DO NOTHING`);
    }
    return n;
  }

  /** Claims the oldest due signal no live runner holds; null when none is due. */
  async claim(owner: string, now: Date): Promise<Signal | null> {
    const d = dialectOf(this.provider);
    const until = this.sql.ts(new Date(now.getTime() + SIGNAL_CLAIM_MS));
    const at = this.sql.ts(now);
    const rows = await this.db.$queryRaw<Array<Record<string, unknown>>>(Prisma.sql`
      UPDATE "ProductSignal" SET "lockedBy" = ${owner}, "lockedUntil" = ${until}, "attempts" = "attempts" + 1
      WHERE "id" IN (
        SELECT "id" FROM "ProductSignal"
        WHERE "state" = 'pending' AND "runAt" <= ${at} AND ("lockedUntil" IS NULL OR "lockedUntil" < ${at})
        ORDER BY "runAt", "id" LIMIT 1 ${Prisma.raw(d.skipLocked())})
      AND ("lockedUntil" IS NULL OR "lockedUntil" < ${at})
      RETURNING "id", "shopId", "kind", "sourceId", "productId", "variantId", "price", "previousPrice", "attempts", "queued", "createdAt"`);
    const r = rows[0];
    if (!r) return null;
    return {
      id: Number(r.id),
      shopId: String(r.shopId),
      kind: r.kind as SignalKind,
      sourceId: String(r.sourceId),
      productId: String(r.productId),
      variantId: String(r.variantId),
      price: r.price === null ? null : Number(r.price),
      previousPrice: r.previousPrice === null ? null : Number(r.previousPrice),
      attempts: Number(r.attempts),
      queued: Number(r.queued),
      createdAt: rawDate(r.createdAt)!,
    };
  }

  /** Ends a signal: done (its messages queued, or none to send), or dropped (with why). */
  async finish(s: Signal, owner: string, state: 'done' | 'dropped', note: string, now: Date): Promise<void> {
    await this.db.$executeRaw(Prisma.sql`
      UPDATE "ProductSignal" SET "state" = ${state}, "note" = ${note}, "lockedBy" = NULL, "lockedUntil" = NULL, "updatedAt" = ${this.sql.ts(now)}
      WHERE "id" = ${s.id} AND "lockedBy" = ${owner}`);
  }

  /** Gives a signal back, due again at `runAt` (Shopify could not be asked, or answered too late). */
  async later(s: Signal, owner: string, runAt: Date, note: string, now: Date): Promise<void> {
    await this.db.$executeRaw(Prisma.sql`
      UPDATE "ProductSignal" SET "runAt" = ${this.sql.ts(runAt)}, "note" = ${note}, "lockedBy" = NULL, "lockedUntil" = NULL, "updatedAt" = ${this.sql.ts(now)}
      WHERE "id" = ${s.id} AND "lockedBy" = ${owner}`);
  }

  /**
   * In a chunk's transaction: counts its messages and renews the claim. False when the claim was
   * lost (another runner holds the signal now): the chunk must not commit.
   */
  async progress(tx: Prisma.TransactionClient, s: Signal, owner: string, queued: number, now: Date): Promise<boolean> {
    const n = await tx.$executeRaw(Prisma.sql`
      UPDATE "ProductSignal" SET "queued" = "queued" + ${queued}, "lockedUntil" = ${this.sql.ts(new Date(now.getTime() + SIGNAL_CLAIM_MS))},
        "updatedAt" = ${this.sql.ts(now)}
      WHERE "id" = ${s.id} AND "lockedBy" = ${owner}`);
    return n === 1;
  }

  /** Deletes signals done or dropped before `before`; returns how many. */
  async prune(before: Date): Promise<number> {
    return this.db.$executeRaw(Prisma.sql`
      DELETE FROM "ProductSignal" WHERE "state" IN ('done', 'dropped') AND "updatedAt" < ${this.sql.ts(before)}`);
  }
}
