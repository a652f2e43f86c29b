// The StockSubscription store on the real database: one row per shop, variant and email whatever
// the order and overlap of subscribes; a renewal extends it, keeps its customer, and asks for the
// next restock again; the subscribers a restock tells are those not told yet and not expired.
import type { Db } from '../../src/db/client';
import { markNotified, subscribe, waitingFor, type NewSubscription } from '../../src/notify-me/subscriptions';
import { openTestDb, testProvider } from '../helpers/db';

describe(`back-in-stock subscriptions on ${testProvider}`, () => {
  let db: Db;
  let close: () => Promise<void>;
  const t0 = new Date('2026-11-28T10:00:00.000Z');
  const day = (d: number) => new Date(t0.getTime() + d * 86_400_000);
  let n = 0;

  beforeAll(async () => {
    ({ db, close } = await openTestDb());
  });
  afterAll(() => close());

  async function newShop(): Promise<string> {
    const id = `stock-shop-${++n}`;
    await db.shop.create({ data: { id, domain: `stock-${n}.myshopify.com` } });
    return id;
  }
  const sub = (shopId: string, more: Partial<NewSubscription> = {}): NewSubscription => ({
    shopId,
    variantId: '45105',
    productId: '8105',
    email: 'ann@example.com',
    customerId: null,
    source: 'guest',
    at: t0,
    expiresAt: day(90),
    ...more,
  });

  it('creates one row, then renews it: later expiry, the customer kept, notifiedAt cleared', async () => {
    const shopId = await newShop();
    expect(await subscribe(db, sub(shopId, { customerId: '77', source: 'customer' }))).toBe('created');
    const [row] = await db.stockSubscription.findMany({ where: { shopId } });
    await markNotified(db, [row!.id], day(3));
    expect(await subscribe(db, sub(shopId, { at: day(5), expiresAt: day(95) }))).toBe('renewed');
    const after = await db.stockSubscription.findMany({ where: { shopId } });
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({
      id: row!.id,
      customerId: '77',
      source: 'guest',
      createdAt: t0,
      renewedAt: day(5),
      expiresAt: day(95),
      notifiedAt: null,
    });
  });

  it('makes one row of many subscribes at once', async () => {
    const shopId = await newShop();
    const results = await Promise.all(Array.from({ length: 8 }, () => subscribe(db, sub(shopId))));
    expect(results.filter((r) => r === 'created')).toHaveLength(1);
    expect(await db.stockSubscription.count({ where: { shopId } })).toBe(1);
  });

  it('gives a restock the subscribers of that variant not told yet and not expired, and tells each once', async () => {
    const shopId = await newShop();
    await subscribe(db, sub(shopId, { email: 'a@example.com' }));
    await subscribe(db, sub(shopId, { email: 'b@example.com', expiresAt: day(1) }));
    await subscribe(db, sub(shopId, { email: 'c@example.com', variantId: '45106' }));
    await subscribe(db, sub(shopId, { email: 'd@example.com', customerId: '9', source: 'customer' }));
    const waiting = await waitingFor(db, shopId, '45105', day(2));
    expect(waiting.map((w) => [w.email, w.customerId, w.productId])).toEqual([
      ['a@example.com', null, '8105'],
      ['d@example.com', '9', '8105'],
    ]);
    expect(
      await markNotified(
        db,
        waiting.map((w) => w.id),
        day(2),
      ),
    ).toBe(2);
    expect(
      await markNotified(
        db,
        waiting.map((w) => w.id),
        day(2),
      ),
    ).toBe(0);
    expect(await waitingFor(db, shopId, '45105', day(2))).toEqual([]);
  });
});
