// The queue of queues' lane end (ShopQueue.release): one statement sets the shop's due time from
// what is still queued and gives the lease up, fenced on the version, so work a writer queues
// while it runs is never hidden.
import { Prisma } from '@prisma/client';
import { rawOf, type Db } from '../../src/db/client';
import { driverTransaction } from '../../src/db/transaction';
import { lowerDue, ShopQueue } from '../../src/outbox/due';
import { openTestDb, testProvider } from '../helpers/db';

describe(`ShopQueue.release on ${testProvider}`, () => {
  let db: Db;
  let close: () => Promise<void>;
  let queue: ShopQueue;
  const t0 = new Date('2026-11-24T10:00:00.000Z');
  const at = (s: number) => new Date(t0.getTime() + s * 1000);

  beforeAll(async () => {
    ({ db, close } = await openTestDb());
    queue = new ShopQueue(db, testProvider);
  });
  afterAll(() => close());

  let n = 0;
  /** A shop whose due row is leased by `w1`, with messages queued at the given offsets (s). */
  async function leasedShop(queued: Array<{ s: number; lane?: number }>): Promise<string> {
    const shopId = `due-shop-${++n}`;
    await db.shop.create({ data: { id: shopId, domain: `due-${n}.myshopify.com` } });
    for (const [i, q] of queued.entries()) {
      await db.outboxMessage.create({
        data: {
          shopId,
          sourceId: `m-${n}-${i}`,
          topic: 'orders/create',
          eventName: 'order_placed',
          body: '{}',
          deliveryClass: q.lane ?? 0,
          runAt: at(q.s),
          dueAt: at(q.s),
        },
      });
    }
    await lowerDue(db, testProvider, queued.length ? queued.map((q) => ({ shopId, runAt: at(q.s) })) : [{ shopId, runAt: t0 }]);
    await db.shopDue.update({ where: { shopId }, data: { leasedBy: 'w1', leasedUntil: at(60) } });
    return shopId;
  }
  const row = (shopId: string) => db.shopDue.findUniqueOrThrow({ where: { shopId } });

  it('sets the due time to the earliest queued message of either lane and gives the lease up', async () => {
    const shopId = await leasedShop([{ s: 30, lane: 0 }, { s: 20, lane: 1 }, { s: 40 }]);
    expect(await queue.release(shopId, 'w1')).toEqual(at(20));
    expect(await row(shopId)).toMatchObject({ dueAt: at(20), leasedBy: null, leasedUntil: null });
  });

  it('no sooner than notBefore, and no due time at all when nothing is queued', async () => {
    const later = await leasedShop([{ s: 5 }]);
    expect(await queue.release(later, 'w1', at(50))).toEqual(at(50));
    expect((await row(later)).dueAt).toEqual(at(50));
    const sooner = await leasedShop([{ s: 5 }]);
    expect(await queue.release(sooner, 'w1', at(1))).toEqual(at(5));
    const empty = await leasedShop([]);
    expect(await queue.release(empty, 'w1', at(50))).toBeNull();
    expect(await row(empty)).toMatchObject({ dueAt: null, leasedBy: null });
  });

  it('leaves a shop leased by another worker alone', async () => {
    const shopId = await leasedShop([{ s: 5 }]);
    expect(await queue.release(shopId, 'w2')).toBeNull();
    expect(await row(shopId)).toMatchObject({ leasedBy: 'w1', dueAt: at(5) });
  });

  // Only PostgreSQL lets a writer's transaction run beside the release (SQLite has one writer).
  (testProvider === 'postgres' ? it : it.skip)(
    'never hides a message queued by a transaction that commits while the release waits for its row',
    async () => {
      const shopId = await leasedShop([]);
      let releasing: Promise<Date | null> | undefined;
      await driverTransaction(db, async (tx) => {
        await tx.$executeRaw(
          Prisma.sql`INSERT INTO "OutboxMessage" ("shopId", "sourceId", "topic", "eventName", "body", "runAt", "dueAt", "updatedAt") VALUES (${shopId}, 'late', 'orders/create', 'order_placed', '{}', ${at(7)}, ${at(7)}, ${t0})`,
        );
        await lowerDue(tx, testProvider, [{ shopId, runAt: at(7) }]);
        // the release starts now: its snapshot cannot see the message, and the row is locked
        releasing = queue.release(shopId, 'w1');
        await new Promise((r) => setTimeout(r, 300));
        const raw = rawOf(db);
        if (raw.provider !== 'postgres') throw new Error('PostgreSQL only');
        const waiting = await raw.pool.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%UPDATE "ShopDue" SET "leasedBy" = NULL%'`,
        );
        expect(waiting.rows[0].n).toBe(1);
      });
      // it matched nothing (the version moved), looked again, and saw the message
      expect(await releasing).toEqual(at(7));
      expect(await row(shopId)).toMatchObject({ dueAt: at(7), leasedBy: null });
    },
  );
});
