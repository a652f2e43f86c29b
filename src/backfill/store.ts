// The Backfill rows as the runner sees them: leases (claim, renew, release), fenced progress
// writes, and the batch transaction that queues imported messages. Every write is fenced on
// (lockedBy = this runner, state = running): a runner whose lease was taken over, or whose
// backfill was cancelled or erased, can no longer write anything. The fence comes first in
// the batch transaction, so on PostgreSQL it also locks the row against a concurrent cancel.
import type { Backfill, Prisma } from '@prisma/client';
import type { Db, DbProvider } from '../db/client';
import type { NewMessage } from '../mapping';
import { mergeStored, profileOfRow, storedProfile, type CustomerProfile } from '../mapping/profile';
import { mergeProfileRows, readProfileRows } from '../db/customer-profiles';
import { HISTORY } from '../outbox/classes';
import { parseStoredSettings, type Settings } from '../settings/settings';
import { insertIgnoringExisting } from './insert';
import { totals, type Kind, type Progress } from './progress';

export { ACTIVE_STATES } from './progress';

export interface ShopState {
  domain: string;
  uninstalled: boolean;
  /** connected | invalid_key | null when there is no connection. */
  connection: string | null;
  settings: Settings;
}

export interface CommitInput {
  backfill: Pick<Backfill, 'id' | 'shopId'>;
  kinds: Kind[];
  messages: NewMessage[];
  /** The customers' profiles with the import's facts merged in (over whatever stage 2 wrote since). */
  profiles: CustomerProfile[];
  /** Orders already sent live as order_placed are not imported again. */
  skipLiveOrders: boolean;
  /** The progress to save, given how many messages were new and how many orders were skipped as live. */
  progress(inserted: number, skippedLive: number): Progress;
}

export class BackfillStore {
  /** The stored profiles of a shop's customers, by customer id. */
  async profiles(shopId: string, customerIds: string[]): Promise<Map<string, CustomerProfile>> {
    const rows = customerIds.length ? await readProfileRows(this.db, this.provider, new Map([[shopId, customerIds]])) : [];
    return new Map(rows.map((r) => [r.customerId, profileOfRow(r)]));
  }

  constructor(
    private readonly db: Db,
    private readonly provider: DbProvider,
    private readonly now: () => Date,
    private readonly runnerId: string,
    private readonly leaseMs: number,
  ) {}

  private lease(): Date {
    return new Date(this.now().getTime() + this.leaseMs);
  }

  private claimable(): Prisma.BackfillWhereInput {
    return { OR: [{ state: 'pending' }, { state: 'running', OR: [{ lockedUntil: null }, { lockedUntil: { lt: this.now() } }] }] };
  }

  /** Takes the oldest backfill nobody holds: pending, or running under an expired lease. */
  async claimNext(exclude: string[]): Promise<Backfill | null> {
    const candidates = await this.db.backfill.findMany({
      where: { AND: [this.claimable(), { id: { notIn: exclude } }] },
      orderBy: { startedAt: 'asc' },
      take: 5,
      select: { id: true },
    });
    for (const { id } of candidates) {
      const res = await this.db.backfill.updateMany({
        where: { AND: [{ id }, this.claimable()] },
        data: { state: 'running', lockedBy: this.runnerId, lockedUntil: this.lease() },
      });
      if (res.count === 1) return this.db.backfill.findUnique({ where: { id } });
    }
    return null;
  }

  private fence(id: string): Prisma.BackfillWhereInput {
    return { id, lockedBy: this.runnerId, state: 'running' };
  }

  /** Extends the lease; false when it is no longer ours (cancelled, taken over, erased). */
  async renew(id: string): Promise<boolean> {
    const res = await this.db.backfill.updateMany({ where: this.fence(id), data: { lockedUntil: this.lease() } });
    return res.count === 1;
  }

  /** Saves progress (and the summary columns) under the fence. */
  async save(id: string, kinds: Kind[], progress: Progress): Promise<boolean> {
    const t = totals(progress, kinds);
    const res = await this.db.backfill.updateMany({
      where: this.fence(id),
      data: { progress: JSON.stringify(progress), processed: t.processed, queued: t.queued, total: t.total, lockedUntil: this.lease() },
    });
    return res.count === 1;
  }

  /**
   * One batch, atomically: fence, insert the messages not yet in the outbox (the history class, tagged
   * with the backfill), save the progress that points past them. Null when the fence failed.
   */
  async commit(input: CommitInput): Promise<{ inserted: number; progress: Progress } | null> {
    const { backfill, messages } = input;
    try {
      return await this.db.$transaction(
        async (tx) => {
          const fenced = await tx.backfill.updateMany({ where: this.fence(backfill.id), data: { lockedUntil: this.lease() } });
          if (fenced.count !== 1) throw new FenceLost();
          let fresh = messages;
          if (input.skipLiveOrders && messages.length) {
            const orderIds = messages.map((m) => m.orderId).filter((o): o is string => Boolean(o));
            const live = await tx.outboxMessage.findMany({
              where: { shopId: backfill.shopId, eventName: 'order_placed', orderId: { in: orderIds } },
              select: { orderId: true },
            });
            const sent = new Set(live.map((l) => l.orderId));
            fresh = messages.filter((m) => !m.orderId || !sent.has(m.orderId));
          }
          const inserted = await insertIgnoringExisting(
            tx,
            this.provider,
            fresh,
            { shopId: backfill.shopId, status: 'queued', heldReason: null, history: true, backfillId: backfill.id },
            this.now(),
          );
          await mergeProfileRows(
            tx,
            this.provider,
            input.profiles.map((p) => storedProfile(backfill.shopId, p)),
            mergeStored,
            this.now(),
          );
          const progress = input.progress(inserted, messages.length - fresh.length);
          const t = totals(progress, input.kinds);
          await tx.backfill.update({
            where: { id: backfill.id },
            data: { progress: JSON.stringify(progress), processed: t.processed, queued: t.queued, total: t.total },
          });
          return { inserted, progress };
        },
        { maxWait: 10_000, timeout: 30_000 },
      );
    } catch (err) {
      if (err instanceof FenceLost) return null;
      throw err;
    }
  }

  async finish(id: string, kinds: Kind[], progress: Progress, state: 'completed' | 'failed', error: string | null): Promise<boolean> {
    const t = totals(progress, kinds);
    const res = await this.db.backfill.updateMany({
      where: this.fence(id),
      data: {
        state,
        error,
        progress: JSON.stringify(progress),
        processed: t.processed,
        queued: t.queued,
        total: t.total,
        finishedAt: this.now(),
        lockedBy: null,
        lockedUntil: null,
      },
    });
    return res.count === 1;
  }

  /** Graceful shutdown: gives the lease back so the next process continues at once. */
  async release(id: string): Promise<void> {
    await this.db.backfill.updateMany({ where: this.fence(id), data: { lockedBy: null, lockedUntil: null } });
  }

  async state(id: string): Promise<string | null> {
    const row = await this.db.backfill.findUnique({ where: { id }, select: { state: true } });
    return row?.state ?? null;
  }

  async shopState(shopId: string): Promise<ShopState | null> {
    const shop = await this.db.shop.findUnique({ where: { id: shopId }, include: { connection: true, settings: true } });
    if (!shop) return null;
    return {
      domain: shop.domain,
      uninstalled: Boolean(shop.uninstalledAt),
      connection: shop.connection?.status ?? null,
      settings: parseStoredSettings(shop.settings?.data),
    };
  }

  /** Historical messages of the shop not yet sent: queued or claimed (index: status, shopId, deliveryClass). */
  queuedHistorical(shopId: string): Promise<number> {
    // 'delivering' too: the worker claims a batch ahead of its paced sends, and those are
    // still the queue the reader must wait for
    return this.db.outboxMessage.count({ where: { status: { in: ['queued', 'delivering'] }, shopId, deliveryClass: HISTORY } });
  }

  /** The running backfill of a shop that waits on this bulk operation, if any. */
  async findByOperation(shopDomain: string, operationId: string): Promise<string | null> {
    const rows = await this.db.backfill.findMany({
      where: { state: 'running', shop: { domain: shopDomain } },
      select: { id: true, progress: true },
    });
    return rows.find((r) => r.progress.includes(JSON.stringify(operationId)))?.id ?? null;
  }
}

class FenceLost extends Error {
  constructor() {
    super('the backfill is no longer held by this runner');
  }
}
