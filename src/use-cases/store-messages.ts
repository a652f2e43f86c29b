// Writes mapped messages into the outbox inside the caller's transaction.
import type { Prisma } from '@prisma/client';
import type { NewMessage } from '../mapping';

type Tx = Prisma.TransactionClient;

export interface StoreOptions {
  shopId: string;
  /** 'queued', or 'held' when the connection cannot deliver yet. */
  status: 'queued' | 'held';
  heldReason: string | null;
  lane?: number;
  backfillId?: string | null;
}

export function toRow(m: NewMessage, o: StoreOptions): Prisma.OutboxMessageCreateManyInput {
  return {
    shopId: o.shopId,
    sourceId: m.sourceId,
    kind: 'event',
    topic: m.topic,
    eventName: m.eventName,
    lane: o.lane ?? 0,
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

/** Inserts the messages whose sourceId the shop has not seen; returns how many were new. */
export async function insertNew(tx: Tx, messages: NewMessage[], o: StoreOptions): Promise<number> {
  if (messages.length === 0) return 0;
  const existing = await tx.outboxMessage.findMany({
    where: { shopId: o.shopId, sourceId: { in: messages.map((m) => m.sourceId) } },
    select: { sourceId: true },
  });
  const seen = new Set(existing.map((e) => e.sourceId));
  const fresh = messages.filter((m) => !seen.has(m.sourceId) && (seen.add(m.sourceId), true));
  if (fresh.length) await tx.outboxMessage.createMany({ data: fresh.map((m) => toRow(m, o)) });
  return fresh.length;
}
