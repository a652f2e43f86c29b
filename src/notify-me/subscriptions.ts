// The StockSubscription table: who waits for which sold-out variant of a shop. Written by the
// notify-me form's use case (subscribe.ts), read by the back-in-stock sending, exported by
// customers/data_request, erased by customers/redact (by email or customer id) and with the shop
// (shop/redact cascades), and swept at expiresAt (sweeper.ts).
import { Prisma } from '@prisma/client';
import type { Db } from '../db/client';

type Tx = Prisma.TransactionClient;

export type SubscriptionSource = 'customer' | 'guest';

export interface NewSubscription {
  shopId: string;
  variantId: string;
  productId: string;
  /** Trimmed and lower-cased. */
  email: string;
  /** The logged-in customer's id (signed by Shopify); null for a guest. */
  customerId: string | null;
  source: SubscriptionSource;
  at: Date;
  expiresAt: Date;
}

/** A customer as a compliance request names them: by every address known for them (normalised), by id, or both. */
export interface SubscriberRef {
  emails: readonly string[];
  customerId: string | null;
}

const isUniqueViolation = (err: unknown) => err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002';

/**
 * Stores the subscription, or renews the one of the same shop, variant and email: a later expiry,
 * the customer id when this request had one, and a new wait for the next restock (notifiedAt
 * cleared). 'created' or 'renewed'; two requests at once make one row.
 */
export async function subscribe(db: Db, s: NewSubscription): Promise<'created' | 'renewed'> {
  const renew = () =>
    db.stockSubscription.updateMany({
      where: { shopId: s.shopId, variantId: s.variantId, email: s.email },
      data: {
        productId: s.productId,
        source: s.source,
        renewedAt: s.at,
        expiresAt: s.expiresAt,
        notifiedAt: null,
        ...(s.customerId !== null ? { customerId: s.customerId } : {}),
      },
    });
  if ((await renew()).count > 0) return 'renewed';
  try {
    await db.stockSubscription.create({
      data: {
        shopId: s.shopId,
        variantId: s.variantId,
        productId: s.productId,
        email: s.email,
        customerId: s.customerId,
        source: s.source,
        createdAt: s.at,
        renewedAt: s.at,
        expiresAt: s.expiresAt,
      },
    });
    return 'created';
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    await renew();
    return 'renewed';
  }
}

export interface WaitingSubscriber {
  id: number;
  email: string;
  customerId: string | null;
  productId: string;
}

/** The subscribers of a variant not told yet and not expired at `at`, oldest first (for the back-in-stock sending). */
export async function waitingFor(tx: Tx | Db, shopId: string, variantId: string, at: Date, take = 10_000): Promise<WaitingSubscriber[]> {
  return tx.stockSubscription.findMany({
    where: { shopId, variantId, notifiedAt: null, expiresAt: { gt: at } },
    orderBy: { id: 'asc' },
    take,
    select: { id: true, email: true, customerId: true, productId: true },
  });
}

/** Records that these subscriptions' back-in-stock email was queued; a later subscribe clears it again. */
export async function markNotified(tx: Tx | Db, ids: readonly number[], at: Date): Promise<number> {
  if (ids.length === 0) return 0;
  return (await tx.stockSubscription.updateMany({ where: { id: { in: [...ids] }, notifiedAt: null }, data: { notifiedAt: at } })).count;
}

function matching(shopId: string, ref: SubscriberRef): Prisma.StockSubscriptionWhereInput | null {
  const or: Prisma.StockSubscriptionWhereInput[] = [];
  if (ref.emails.length) or.push({ email: { in: [...ref.emails] } });
  if (ref.customerId) or.push({ customerId: ref.customerId });
  return or.length ? { shopId, OR: or } : null;
}

/** Erases the customer's subscriptions (by exact addresses, and by customer id); returns how many. */
export async function eraseSubscriptions(tx: Tx, shopId: string, ref: SubscriberRef): Promise<number> {
  const where = matching(shopId, ref);
  return where ? (await tx.stockSubscription.deleteMany({ where })).count : 0;
}

/** The customer's subscriptions, for customers/data_request. */
export async function exportSubscriptions(tx: Tx, shopId: string, ref: SubscriberRef) {
  const where = matching(shopId, ref);
  const rows = where ? await tx.stockSubscription.findMany({ where, orderBy: { id: 'asc' }, take: 10_000 }) : [];
  return {
    summary:
      'Sold-out products this customer asked to be emailed about when they are back in stock (the storefront\u2019s "notify me" form), with the email each alert goes to.',
    subscriptions: rows.map((r) => ({
      product_id: r.productId,
      variant_id: r.variantId,
      email: r.email,
      customer_id: r.customerId,
      source: r.source,
      subscribed_at: r.createdAt.toISOString(),
      renewed_at: r.renewedAt.toISOString(),
      kept_until: r.expiresAt.toISOString(),
      notified_at: r.notifiedAt?.toISOString() ?? null,
    })),
  };
}
