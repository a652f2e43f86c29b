// Writes mapped messages into the outbox inside the caller's transaction.
import type { Prisma } from '@prisma/client';
import { insertRows } from '../db/batch-sql';
import type { DbProvider } from '../db/client';
import type { SqlTx } from '../db/transaction';
import type { NewMessage } from '../mapping';
import { classOf, HISTORY } from './classes';

type Tx = Prisma.TransactionClient;

export interface StoreOptions {
  shopId: string;
  /** 'queued', or 'held' when the connection cannot deliver yet. */
  status: 'queued' | 'held';
  heldReason: string | null;
  /** The historical import: the history class, whatever the event is named. */
  history?: boolean;
  backfillId?: string | null;
}

export function toRow(m: NewMessage, o: StoreOptions): Prisma.OutboxMessageCreateManyInput {
  return {
    shopId: o.shopId,
    sourceId: m.sourceId,
    kind: 'event',
    topic: m.topic,
    eventName: m.eventName,
    deliveryClass: o.history ? HISTORY : classOf(m.eventName),
    email: m.email,
    customerId: m.customerId,
    checkoutToken: m.checkoutToken,
    orderId: m.orderId ?? null,
    body: JSON.stringify(m.body),
    // an event without a usable address is recorded, with why, and never sent
    status: m.skip ? 'skipped' : o.status,
    heldReason: !m.skip && o.status === 'held' ? o.heldReason : null,
    lastError: m.skip?.reason ?? null,
    runAt: m.runAt,
    dueAt: m.runAt,
    backfillId: o.backfillId ?? null,
  };
}

/** Outbox rows in one raw multi-row INSERT a few hundred at a time (see db/batch-sql.ts), stamped `now`. */
export function insertMessages(
  tx: Pick<SqlTx, '$executeRaw'>,
  provider: DbProvider,
  rows: Prisma.OutboxMessageCreateManyInput[],
  now: Date,
): Promise<number> {
  return insertRows(
    tx,
    provider,
    'OutboxMessage',
    rows.map((r) => ({ ...r, createdAt: now, updatedAt: now })),
  );
}

/** Inserts the messages whose sourceId the shop has not seen; returns how many were new. */
export async function insertNew(tx: Tx, provider: DbProvider, messages: NewMessage[], o: StoreOptions, now = new Date()): Promise<number> {
  if (messages.length === 0) return 0;
  const existing = await tx.outboxMessage.findMany({
    where: { shopId: o.shopId, sourceId: { in: messages.map((m) => m.sourceId) } },
    select: { sourceId: true },
  });
  const seen = new Set(existing.map((e) => e.sourceId));
  const fresh = messages.filter((m) => !seen.has(m.sourceId) && (seen.add(m.sourceId), true));
  if (fresh.length)
    await insertMessages(
      tx,
      provider,
      fresh.map((m) => toRow(m, o)),
      now,
    );
  return fresh.length;
}
