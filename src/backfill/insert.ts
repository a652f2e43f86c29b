// Bulk insert of imported messages: multi-row INSERT ... ON CONFLICT (shopId, sourceId) DO
// NOTHING, on both providers. The unique key does the dedupe (a re-run inserts nothing), and
// one statement carries fifty rows, where createMany through the driver adapter works row by
// row. Rows come from the shared toRow, so columns cannot drift.
import { Prisma } from '@prisma/client';
import type { DbProvider } from '../db/client';
import type { NewMessage } from '../mapping';
import { Sql } from '../db/sql';
import { toRow, type StoreOptions } from '../outbox/store-messages';

type Tx = Prisma.TransactionClient;

const ROWS_PER_STATEMENT = 50;

/** Inserts the messages whose (shop, sourceId) is new; returns how many were inserted. */
export async function insertIgnoringExisting(
  tx: Tx,
  provider: DbProvider,
  messages: NewMessage[],
  opts: StoreOptions,
  now: Date,
): Promise<number> {
  const sql = new Sql(tx as never, provider);
  const at = sql.ts(now);
  let inserted = 0;
  for (let i = 0; i < messages.length; i += ROWS_PER_STATEMENT) {
    const values = messages.slice(i, i + ROWS_PER_STATEMENT).map((m) => {
      const r = toRow(m, opts);
      const runAt = sql.ts(new Date(r.runAt as Date));
      const dueAt = sql.ts(new Date(r.dueAt as Date));
      return Prisma.sql`(${r.shopId}, ${r.sourceId}, ${r.kind ?? 'event'}, ${r.topic}, ${r.eventName}, ${sql.int(r.deliveryClass ?? 0)}, ${r.email ?? null}, ${r.customerId ?? null},
        ${r.checkoutToken ?? null}, ${r.orderId ?? null}, ${r.body}, ${r.status ?? 'queued'}, ${r.heldReason ?? null}, ${runAt}, ${dueAt}, ${r.backfillId ?? null}, ${at}, ${at})`;
    });
    const rows = await tx.$queryRaw<{ id: number }[]>(Prisma.sql`
      INSERT INTO "OutboxMessage" ("shopId", "sourceId", "kind", "topic", "eventName", "deliveryClass", "email", "customerId",
        "checkoutToken", "orderId", "body", "status", "heldReason", "runAt", "dueAt", "backfillId", "createdAt", "updatedAt")
      VALUES ${Prisma.join(values)}
      ON CONFLICT ("shopId", "sourceId") DO NOTHING
      RETURNING "id"`);
    inserted += rows.length;
    // a synchronous driver (better-sqlite3) would otherwise hold the event loop for the whole batch
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return inserted;
}
