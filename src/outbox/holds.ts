// Lifting the holds of a wrong service address. When the email service's address answers 404
// (SERVICE_WEBHOOK_URL for events, SERVICE_BASE_URL for contact deletes), a message retries a few
// times and then its shop's deliveries are held as `service_not_found` (retry-policy.ts): the
// address is the operator's configuration, the same for every shop, so sending on would only
// kill messages one at a time. Such a hold lifts
// - at process start (releaseAll): the operator may have fixed the address and restarted;
// - by a re-probe (reprobe), run periodically: one held message per shop goes back to the queue,
//   and once a message of the shop is delivered after the hold, the rest follow;
// - by the merchant's Retry in the delivery log, which re-queues one message like a probe.
import type { Db } from '../db/client';
import type { Logger } from '../observability/logger';
import type { HeldReason } from './message';
import type { OutboxRepository } from './repository';

const REASON: HeldReason = 'service_not_found';

export interface HoldsDeps {
  db: Db;
  repo: OutboxRepository;
  logger: Logger;
  now?: () => Date;
  /** Messages of the shop went back to the queue: index them as due and wake the workers. */
  onRequeued?: (shopId: string) => void;
}

export interface ReprobeResult {
  /** Shops whose deliveries are held for a wrong address. */
  held: number;
  /** Shops given one message back to try the address again. */
  probed: number;
  /** Shops whose held messages were all queued again, after a delivery went through. */
  released: number;
}

interface HeldShop {
  shopId: string;
  /** When the shop's latest message was held: a delivery after it shows the address answers. */
  heldAt: Date;
  messages: number;
}

export function createHolds(deps: HoldsDeps) {
  const { db, repo, logger } = deps;
  const now = deps.now ?? (() => new Date());
  // the operator hears of the problem once, and again only after it was over
  let reported = false;

  async function heldShops(): Promise<HeldShop[]> {
    const rows = await db.outboxMessage.groupBy({ by: ['shopId'], where: { status: 'held', heldReason: REASON }, _count: { _all: true } });
    const shops: HeldShop[] = [];
    for (const r of rows) {
      // the latest hold of the shop (an aggregate of a date column does not read back as a date on SQLite)
      const latest = await db.outboxMessage.findFirst({
        where: { shopId: r.shopId, status: 'held', heldReason: REASON },
        orderBy: { updatedAt: 'desc' },
        select: { updatedAt: true },
      });
      if (latest) shops.push({ shopId: r.shopId, heldAt: latest.updatedAt, messages: r._count._all });
    }
    return shops;
  }

  async function release(shopId: string): Promise<number> {
    const n = await repo.resumeShop(shopId, [REASON], now());
    if (n) deps.onRequeued?.(shopId);
    return n;
  }

  /** One held message of the shop back on the queue, the one tried most (a 404 holds it again at once). */
  async function probe(shopId: string): Promise<boolean> {
    const one = await db.outboxMessage.findFirst({
      where: { shopId, status: 'held', heldReason: REASON },
      orderBy: [{ attempts: 'desc' }, { id: 'asc' }],
      select: { id: true },
    });
    if (!one) return false;
    const at = now();
    const res = await db.outboxMessage.updateMany({
      where: { id: one.id, status: 'held', heldReason: REASON },
      data: { status: 'queued', heldReason: null, runAt: at, updatedAt: at },
    });
    if (res.count) deps.onRequeued?.(shopId);
    return res.count === 1;
  }

  return {
    /** At process start: every delivery held for a wrong address is queued again. */
    async releaseAll(): Promise<number> {
      let messages = 0;
      const shops = await heldShops();
      for (const s of shops) messages += await release(s.shopId);
      if (messages)
        logger.info(
          { shops: shops.length, messages },
          'deliveries held because the email service address answered 404 are queued again at start (the address may have been fixed)',
        );
      return messages;
    },

    /**
     * For each shop held for a wrong address: once a message of it was delivered after the hold
     * (a probe, or the merchant's retry), the rest is queued again; otherwise, when nothing of
     * the shop is due or being sent, one held message is queued to try the address again.
     */
    async reprobe(): Promise<ReprobeResult> {
      const held = await heldShops();
      const result: ReprobeResult = { held: held.length, probed: 0, released: 0 };
      if (held.length === 0) {
        if (reported) logger.info('the email service address answers again; the deliveries held for its 404 are released');
        reported = false;
        return result;
      }
      if (!reported) {
        reported = true;
        logger.error(
          { shops: held.length, messages: held.reduce((n, s) => n + s.messages, 0) },
          'the email service address answers 404 Not Found: deliveries are held. Check SERVICE_WEBHOOK_URL (send-event) and SERVICE_BASE_URL (contact deletes); they are the same for every shop. Held deliveries are tried again periodically and resume once the address answers',
        );
      }
      const at = now();
      for (const s of held) {
        const delivered = await db.outboxMessage.findFirst({
          where: { shopId: s.shopId, status: 'delivered', deliveredAt: { gte: s.heldAt } },
          select: { id: true },
        });
        if (delivered) {
          if (await release(s.shopId)) {
            result.released += 1;
            logger.info(
              { shopId: s.shopId },
              'a delivery went through after the service address answered 404; the shop’s held deliveries are queued again',
            );
          }
          continue;
        }
        // something of the shop is due or being sent (an earlier probe, a new event): it is the probe
        const busy = await db.outboxMessage.findFirst({
          where: { shopId: s.shopId, OR: [{ status: 'delivering' }, { status: 'queued', runAt: { lte: at } }] },
          select: { id: true },
        });
        if (!busy && (await probe(s.shopId))) result.probed += 1;
      }
      return result;
    },
  };
}

export type Holds = ReturnType<typeof createHolds>;
