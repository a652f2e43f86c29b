// Who hears of a restock or a price drop, a chunk at a time, each chunk read (and locked on
// PostgreSQL) and marked in the transaction that queues its messages, so nobody is told twice
// whatever runs beside it:
// - back in stock: the variant's notify-me subscribers not told yet, and vouched shoppers who viewed
//   or carted it while it was sold out in the last 30 days and were not told since;
// - price drop: vouched shoppers who viewed or carted it in the last 14 days, have not bought it since,
//   and were not told of a drop of it in the last 7 days.
// Shoppers (not subscribers, who asked) whose profile says they unsubscribed from email marketing
// are marked and left out.
import { Prisma } from '@prisma/client';
import type { DbProvider } from '../../db/client';
import { dialectOf } from '../../db/dialects';
import { Sql } from '../../db/sql';
import { parseProfile } from '../../mapping/profile';
import { markNotified } from '../../notify-me/subscriptions';

type Tx = Prisma.TransactionClient;

const DAY_MS = 86_400_000;
/** A view or add of a sold-out variant counts for its restock this long. */
export const RESTOCK_WINDOW_MS = 30 * DAY_MS;
/** A view or add counts for a price drop this long. */
export const DROP_WINDOW_MS = 14 * DAY_MS;
/** At most one price_dropped per shopper and variant in this time. */
export const DROP_REPEAT_MS = 7 * DAY_MS;

export interface Recipient {
  email: string;
  customerId: string | null;
}

export interface Chunk {
  /** Whom to send to (each email once). */
  send: Recipient[];
  /** How many rows the chunk read: 0 means nobody is left. */
  read: number;
}

/** Reads the next chunk of a variant's restock audience and marks it told (at `now`). */
export async function restockChunk(
  tx: Tx,
  provider: DbProvider,
  shopId: string,
  variantId: string,
  now: Date,
  limit: number,
): Promise<Chunk> {
  const sql = new Sql(tx as never, provider);
  const lock = Prisma.raw(dialectOf(provider).lockRows());
  const at = sql.ts(now);
  const subs = await tx.$queryRaw<Array<{ id: number | bigint; email: string; customerId: string | null }>>(Prisma.sql`
    SELECT "id", "email", "customerId" FROM "StockSubscription"
    WHERE "shopId" = ${shopId} AND "variantId" = ${variantId} AND "notifiedAt" IS NULL AND "expiresAt" > ${at}
    ORDER BY "id" LIMIT ${limit} ${lock}`);
  const room = limit - subs.length;
  const interests =
    room > 0
      ? await tx.$queryRaw<Array<{ email: string }>>(Prisma.sql`
        SELECT "email" FROM "ProductInterest"
        WHERE "shopId" = ${shopId} AND "variantId" = ${variantId} AND "soldOutAt" >= ${sql.ts(new Date(now.getTime() - RESTOCK_WINDOW_MS))}
          AND ("restockSentAt" IS NULL OR "restockSentAt" < "soldOutAt")
        ORDER BY "email" LIMIT ${room} ${lock}`)
      : [];
  await markNotified(
    tx,
    subs.map((s) => Number(s.id)),
    now,
  );
  const shoppers = interests.map((i) => i.email);
  const told = [...new Set([...subs.map((s) => s.email), ...shoppers])];
  // a subscriber who also viewed it is told once, for both; never marked before the sold-out view
  // it answers (another process's clock may run ahead), so the row is not read again
  if (told.length) {
    await tx.$executeRaw(Prisma.sql`
      UPDATE "ProductInterest" SET "restockSentAt" = CASE WHEN "soldOutAt" IS NOT NULL AND "soldOutAt" > ${at} THEN "soldOutAt" ELSE ${at} END
      WHERE "shopId" = ${shopId} AND "variantId" = ${variantId} AND "email" IN (${Prisma.join(told)})`);
  }
  const unsubscribed = await optedOut(tx, shopId, shoppers);
  const send = new Map<string, Recipient>();
  for (const s of subs) send.set(s.email, { email: s.email, customerId: s.customerId });
  for (const email of shoppers) if (!send.has(email) && !unsubscribed.has(email)) send.set(email, { email, customerId: null });
  return { send: [...send.values()], read: subs.length + interests.length };
}

/** Reads the next chunk of a variant's price-drop audience and marks it told (at `now`). */
export async function dropChunk(tx: Tx, provider: DbProvider, shopId: string, variantId: string, now: Date, limit: number): Promise<Chunk> {
  const sql = new Sql(tx as never, provider);
  const lock = Prisma.raw(dialectOf(provider).lockRows());
  const since = sql.ts(new Date(now.getTime() - DROP_WINDOW_MS));
  const rows = await tx.$queryRaw<Array<{ email: string; viewedAt: unknown; cartedAt: unknown }>>(Prisma.sql`
    SELECT "email", "viewedAt", "cartedAt" FROM "ProductInterest"
    WHERE "shopId" = ${shopId} AND "variantId" = ${variantId}
      AND ("viewedAt" >= ${since} OR "cartedAt" >= ${since})
      AND ("boughtAt" IS NULL OR "boughtAt" < "viewedAt" OR "boughtAt" < "cartedAt")
      AND ("dropSentAt" IS NULL OR "dropSentAt" < ${sql.ts(new Date(now.getTime() - DROP_REPEAT_MS))})
    ORDER BY "email" LIMIT ${limit} ${lock}`);
  const emails = rows.map((r) => r.email);
  if (emails.length)
    await tx.$executeRaw(Prisma.sql`
      UPDATE "ProductInterest" SET "dropSentAt" = ${sql.ts(now)}
      WHERE "shopId" = ${shopId} AND "variantId" = ${variantId} AND "email" IN (${Prisma.join(emails)})`);
  const unsubscribed = await optedOut(tx, shopId, emails);
  return { send: emails.filter((e) => !unsubscribed.has(e)).map((email) => ({ email, customerId: null })), read: rows.length };
}

/** Of these emails, those whose customer profile says they unsubscribed from email marketing. */
async function optedOut(tx: Tx, shopId: string, emails: string[]): Promise<Set<string>> {
  if (emails.length === 0) return new Set();
  const rows = await tx.customerProfile.findMany({
    where: { shopId, email: { in: emails } },
    select: { customerId: true, email: true, data: true, digest: true },
  });
  const out = new Set<string>();
  for (const r of rows) {
    if (r.email && parseProfile(r.customerId, r.data, r.digest).emailConsent?.value.state === 'unsubscribed') out.add(r.email);
  }
  return out;
}
