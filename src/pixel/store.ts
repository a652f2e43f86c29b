// What stage 2 reads and writes for storefront batches, set-based: one query per kind of state
// per shop and batch (shop, visitors, waiting events, pending abandonments, existing source ids),
// and one write per kind inside the batch's transaction (write()).
import type { Prisma } from '@prisma/client';
import type { Db } from '../db/client';

type Tx = Prisma.TransactionClient;

/** The storefront's abandonment events: pending (queued or held) until they fire or are cancelled. */
export const STOREFRONT_ABANDONMENTS = ['browse_abandoned', 'cart_abandoned'] as const;
export type StorefrontAbandonment = (typeof STOREFRONT_ABANDONMENTS)[number];
const PENDING = ['queued', 'held'];

export interface PixelShop {
  id: string;
  domain: string;
  uninstalledAt: Date | null;
  connection: { status: string } | null;
  settings: { data: string } | null;
  pixel: { key: string; state: string } | null;
}

export interface Visitor {
  email: string;
  identifiedAt: Date;
  expiresAt: Date;
}

export interface WaitingRow {
  name: string;
  eventId: string;
  occurredAt: Date;
  data: string;
}

export interface PendingAbandonment {
  id: number;
  sourceId: string;
  eventName: StorefrontAbandonment;
  email: string;
  body: string;
}

export interface PixelPlan {
  /** Clients whose waiting events and identity go (consent withdrawn). */
  forget: Array<{ shopId: string; clientId: string }>;
  /** Clients identified now: their waiting events counted for the email and go. */
  stitched: Array<{ shopId: string; clientId: string }>;
  visitors: Array<{ shopId: string; clientId: string } & Visitor>;
  waiting: Prisma.PixelEventCreateManyInput[];
  inserts: Prisma.OutboxMessageCreateManyInput[];
  /** Pending abandonments that newer activity moves later (and adds to). */
  updates: Array<{ id: number; body: string; runAt: Date }>;
  /** Pending abandonments that later activity ended, with why. */
  cancels: Array<{ id: number; reason: string }>;
}

export const emptyPixelPlan = (): PixelPlan => ({ forget: [], stitched: [], visitors: [], waiting: [], inserts: [], updates: [], cancels: [] });

/** Keys of per-shop state: shop id and the object's id. */
export const keyOf = (shopId: string, id: string) => `${shopId}\u0000${id}`;

function byShop<T extends { shopId: string }>(rows: T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const r of rows) out.set(r.shopId, [...(out.get(r.shopId) ?? []), r]);
  return out;
}

export class PixelStore {
  constructor(private readonly db: Db) {}

  async shops(domains: string[]): Promise<Map<string, PixelShop>> {
    if (domains.length === 0) return new Map();
    const rows = await this.db.shop.findMany({
      where: { domain: { in: domains } },
      select: {
        id: true, domain: true, uninstalledAt: true, connection: { select: { status: true } }, settings: { select: { data: true } },
        pixel: { select: { key: true, state: true } },
      },
    });
    return new Map(rows.map((r) => [r.domain, r]));
  }

  /** Identified visitors among these clients, by keyOf(shopId, clientId). */
  async visitors(clients: Map<string, Set<string>>): Promise<Map<string, Visitor>> {
    const out = new Map<string, Visitor>();
    for (const [shopId, ids] of clients) {
      const rows = await this.db.pixelVisitor.findMany({ where: { shopId, clientId: { in: [...ids] } } });
      for (const r of rows) out.set(keyOf(shopId, r.clientId), { email: r.email, identifiedAt: r.identifiedAt, expiresAt: r.expiresAt });
    }
    return out;
  }

  /** Waiting (anonymous) events of these clients still inside their window, oldest first. */
  async waiting(clients: Map<string, Set<string>>, now: Date): Promise<Map<string, WaitingRow[]>> {
    const out = new Map<string, WaitingRow[]>();
    for (const [shopId, ids] of clients) {
      const rows = await this.db.pixelEvent.findMany({
        where: { shopId, clientId: { in: [...ids] }, expiresAt: { gt: now } },
        orderBy: { id: 'asc' },
        select: { clientId: true, name: true, eventId: true, occurredAt: true, data: true },
      });
      for (const { clientId, ...row } of rows) {
        const k = keyOf(shopId, clientId);
        out.set(k, [...(out.get(k) ?? []), row]);
      }
    }
    return out;
  }

  /** Pending storefront abandonments of these emails, by keyOf(shopId, email). */
  async pending(emails: Map<string, Set<string>>): Promise<Map<string, PendingAbandonment[]>> {
    const out = new Map<string, PendingAbandonment[]>();
    for (const [shopId, set] of emails) {
      if (set.size === 0) continue;
      // served by the (shopId, email, eventName) index; the status is checked here, because
      // naming it in the query lets SQLite choose a status index and walk the shop's queue
      const rows = await this.db.outboxMessage.findMany({
        where: { shopId, email: { in: [...set] }, eventName: { in: [...STOREFRONT_ABANDONMENTS] } },
        orderBy: { id: 'asc' },
        select: { id: true, sourceId: true, eventName: true, email: true, body: true, status: true },
      });
      for (const { status, ...r } of rows) {
        if (!PENDING.includes(status)) continue;
        const k = keyOf(shopId, r.email!);
        out.set(k, [...(out.get(k) ?? []), { ...r, email: r.email!, eventName: r.eventName as StorefrontAbandonment }]);
      }
    }
    return out;
  }

  /** Source ids the shop already has (a repeated view within the hour, an event seen before). */
  async existing(shopId: string, sourceIds: string[]): Promise<Set<string>> {
    if (sourceIds.length === 0) return new Set();
    const rows = await this.db.outboxMessage.findMany({ where: { shopId, sourceId: { in: sourceIds } }, select: { sourceId: true } });
    return new Set(rows.map((r) => r.sourceId));
  }

  /** Applies a batch's plan in the caller's transaction. */
  async write(tx: Tx, plan: PixelPlan): Promise<void> {
    for (const [shopId, rows] of byShop([...plan.forget, ...plan.stitched])) {
      await tx.pixelEvent.deleteMany({ where: { shopId, clientId: { in: rows.map((r) => r.clientId) } } });
    }
    for (const [shopId, rows] of byShop(plan.forget)) {
      await tx.pixelVisitor.deleteMany({ where: { shopId, clientId: { in: rows.map((r) => r.clientId) } } });
    }
    if (plan.visitors.length) {
      for (const [shopId, rows] of byShop(plan.visitors)) {
        await tx.pixelVisitor.deleteMany({ where: { shopId, clientId: { in: rows.map((r) => r.clientId) } } });
      }
      await tx.pixelVisitor.createMany({ data: plan.visitors });
    }
    if (plan.waiting.length) await tx.pixelEvent.createMany({ data: plan.waiting });
    const reasons = new Map<string, number[]>();
    for (const c of plan.cancels) reasons.set(c.reason, [...(reasons.get(c.reason) ?? []), c.id]);
    for (const [reason, ids] of reasons) {
      await tx.outboxMessage.updateMany({ where: { id: { in: ids }, status: { in: PENDING } }, data: { status: 'cancelled', lastError: reason } });
    }
    for (const u of plan.updates) {
      // only while still pending: a message already being sent is left as it is
      await tx.outboxMessage.updateMany({ where: { id: u.id, status: { in: PENDING } }, data: { body: u.body, runAt: u.runAt, dueAt: u.runAt } });
    }
    if (plan.inserts.length) await tx.outboxMessage.createMany({ data: plan.inserts });
  }
}
