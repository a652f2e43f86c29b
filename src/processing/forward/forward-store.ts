// What stage 2 reads and writes for the forwarded topics, set-based: one query per kind of
// state per batch (shops, customer profiles, order summaries, fulfillments, existing messages,
// orders of abandoned checkouts), and one write transaction per batch (see write()).
import { Prisma } from '@prisma/client';
import { dialectOf } from '../../db/dialects';
import { rawOf, type Db, type DbProvider } from '../../db/client';
import { setColumns, whereShopKeys } from '../../db/batch-sql';
import { driverQueries, type SqlTx } from '../../db/transaction';
import { prepare, rawDate, type RawStatement, type StatementBuilder } from '../../db/raw';
import { Sql } from '../../db/sql';
import type { StoredFulfillment, StoredOrder } from '../../mapping';
import { mergeStored, profileOfRow, type CustomerProfile, type StoredProfile } from '../../mapping/profile';
import { mergeProfileRows, readProfileRows } from '../../db/customer-profiles';
import { HISTORY } from '../../outbox/classes';
import { STOREFRONT_ABANDONMENTS } from '../storefront/store';
import { insertMessages } from '../../outbox/store-messages';

type Tx = SqlTx;

export interface ShopRow {
  id: string;
  domain: string;
  uninstalledAt: Date | null;
  connection: { status: string } | null;
  settings: { data: string } | null;
  /** The scopes of the shop's offline session (null: none stored), read with the shop. */
  scope: string | null;
}

/** A pending message that follows its customer's profile (ForwardStore.pendingCustomerMessages). */
export interface PendingCustomerMessage {
  id: number;
  /** A deferred customer_updated; else a historical import. */
  deferred: boolean;
  email: string | null;
  body: string;
}

export interface ExistingMessage {
  id: number;
  status: string;
  dueAt: Date;
}

/** Keys of per-shop state: shop id and the object's id. */
export const keyOf = (shopId: string, id: string) => `${shopId}\u0000${id}`;

/** keyOf() keys grouped by shop: shop id → the objects' ids. */
function byShop(keys: Iterable<string>): Map<string, string[]> {
  const ids = new Map<string, string[]>();
  for (const k of keys) {
    const cut = k.indexOf('\u0000');
    const shopId = k.slice(0, cut);
    const list = ids.get(shopId);
    if (list) list.push(k.slice(cut + 1));
    else ids.set(shopId, [k.slice(cut + 1)]);
  }
  return ids;
}

export interface WritePlan {
  /** Pending checkout_abandoned messages to cancel, by checkout token or email (an order came). */
  cancels: Array<{ shopId: string; tokens: string[]; emails: string[] }>;
  /** Still-pending abandoned checkouts that newer checkout activity moves later. */
  abandonmentUpdates: Array<{ id: number; runAt: Date; body: string; email: string | null }>;
  /** Skipped messages whose event now has a usable address: they take the new version. */
  replacements: Array<{ id: number; row: Prisma.OutboxMessageCreateManyInput }>;
  inserts: Prisma.OutboxMessageCreateManyInput[];
  /** Customer profiles this batch changed, merged at commit with the rows as they are then. */
  profiles: StoredProfile[];
  /** Orders' variants by email: the shopper's interest in them counts as bought (no price drop for them). */
  purchases: Array<{ shopId: string; email: string; variantIds: string[]; at: Date }>;
  /** Pending messages whose contact properties (or deferred customer_updated body) are rewritten, or that are cancelled. */
  customerMessages: Array<{ id: number; body: string; email: string | null } | { id: number; cancel: string }>;
  orders: Array<{ shopId: string; order: StoredOrder }>;
  fulfillments: Array<{ shopId: string; state: StoredFulfillment }>;
}

export const emptyPlan = (): WritePlan => ({
  cancels: [],
  abandonmentUpdates: [],
  replacements: [],
  inserts: [],
  profiles: [],
  purchases: [],
  customerMessages: [],
  orders: [],
  fulfillments: [],
});

// Parameter 1: the domains, as the dialect's list parameter.
const SHOPS: StatementBuilder = (p, d) => `
  SELECT "s"."id", "s"."domain", "s"."uninstalledAt", "c"."status", "t"."data", "o"."scope"
  FROM "Shop" AS "s"
  LEFT JOIN "Connection" AS "c" ON "c"."shopId" = "s"."id"
  LEFT JOIN "ShopSettings" AS "t" ON "t"."shopId" = "s"."id"
  LEFT JOIN "Session" AS "o" ON "o"."id" = 'offline_' || "s"."domain"
  WHERE ${d.inList('"s"."domain"', (t) => p(1, t))}`;

interface ShopSql {
  id: string;
  domain: string;
  uninstalledAt: unknown;
  status: string | null;
  data: string | null;
  scope: string | null;
}

export class ForwardStore {
  private readonly shopsStatement: RawStatement<ShopSql>;
  /** The plan's reads, on the driver: they run for every batch, and Prisma's client would add its per-query cost to each. */
  private readonly reads: SqlTx;

  private readonly provider: DbProvider;
  private readonly sql: Sql;

  constructor(private readonly db: Db) {
    this.provider = rawOf(db).provider;
    this.sql = new Sql(db, this.provider);
    this.shopsStatement = prepare(rawOf(db), 'stage2_shops', SHOPS);
    this.reads = driverQueries(db);
  }

  /** The batch's shops with their connection status and settings: one prepared statement. */
  async shops(domains: string[]): Promise<Map<string, ShopRow>> {
    const rows = await this.shopsStatement.run([dialectOf(rawOf(this.db).provider).listParam(domains)]);
    return new Map(
      rows.map((r) => [
        r.domain,
        {
          id: r.id,
          domain: r.domain,
          uninstalledAt: rawDate(r.uninstalledAt),
          connection: r.status === null ? null : { status: r.status },
          settings: r.data === null ? null : { data: r.data },
          scope: r.scope,
        },
      ]),
    );
  }

  /** The stored profiles of these customers (keys: shop id and customer id). */
  async profiles(keys: Set<string>): Promise<Map<string, CustomerProfile>> {
    if (keys.size === 0) return new Map();
    const rows = await readProfileRows(this.reads, this.provider, byShop(keys));
    return new Map(rows.map((r) => [keyOf(r.shopId, r.customerId), profileOfRow(r)]));
  }

  /**
   * The customers' pending messages whose content follows their profile: a deferred
   * customer_updated (source id `profile:…`), and historical imports, whose contact properties
   * must never be older than the live ones when they finally go. Read through the (shopId,
   * customerId) index: the status is compared as an expression, so that SQLite never walks the
   * shop's whole queue through a status index instead (test/faults/deep-backlog.test.ts).
   */
  async pendingCustomerMessages(keys: Set<string>): Promise<Map<string, PendingCustomerMessage[]>> {
    if (keys.size === 0) return new Map();
    const rows = await this.reads.$queryRaw<
      Array<{
        id: number | bigint;
        shopId: string;
        customerId: string;
        sourceId: string;
        deliveryClass: number | bigint;
        email: string | null;
        body: string;
      }>
    >(Prisma.sql`SELECT "id", "shopId", "customerId", "sourceId", "deliveryClass", "email", "body" FROM "OutboxMessage"
      WHERE (${whereKeys(keys, 'customerId')}) AND ("status" || '') IN ('queued', 'held')
        AND (("eventName" = 'customer_updated' AND "sourceId" LIKE 'profile:%') OR "deliveryClass" = ${HISTORY})`);
    const out = new Map<string, PendingCustomerMessage[]>();
    for (const r of rows) {
      const k = keyOf(r.shopId, r.customerId);
      const m: PendingCustomerMessage = {
        id: Number(r.id),
        deferred: Number(r.deliveryClass) !== HISTORY,
        email: r.email,
        body: r.body,
      };
      out.set(k, [...(out.get(k) ?? []), m]);
    }
    return out;
  }

  async orders(keys: Set<string>): Promise<Map<string, StoredOrder>> {
    if (keys.size === 0) return new Map();
    const rows = await this.reads.$queryRaw<Array<{ shopId: string; orderId: string; summary: string }>>(
      Prisma.sql`SELECT "shopId", "orderId", "summary" FROM "OrderSummary" WHERE ${whereKeys(keys, 'orderId')}`,
    );
    return new Map(rows.map((r) => [keyOf(r.shopId, r.orderId), JSON.parse(r.summary) as StoredOrder]));
  }

  /** For orders stored before order summaries existed: the email of the last message about the order. */
  async orderEmailsFromMessages(keys: Set<string>): Promise<Map<string, string>> {
    if (keys.size === 0) return new Map();
    const rows = await this.reads.$queryRaw<Array<{ shopId: string; orderId: string; email: string }>>(
      Prisma.sql`SELECT "shopId", "orderId", "email" FROM "OutboxMessage" WHERE "email" IS NOT NULL AND (${whereKeys(keys, 'orderId')}) ORDER BY "id"`,
    );
    return new Map(rows.map((r) => [keyOf(r.shopId, r.orderId), r.email]));
  }

  async fulfillments(keys: Set<string>): Promise<Map<string, StoredFulfillment>> {
    if (keys.size === 0) return new Map();
    const rows = await this.reads.$queryRaw<Array<{ shopId: string; fulfillmentId: string; state: string }>>(
      Prisma.sql`SELECT "shopId", "fulfillmentId", "state" FROM "FulfillmentState" WHERE ${whereKeys(keys, 'fulfillmentId')}`,
    );
    return new Map(rows.map((r) => [keyOf(r.shopId, r.fulfillmentId), JSON.parse(r.state) as StoredFulfillment]));
  }

  /** Messages the shops already have under these source ids (keys: shop id and source id). */
  async existing(keys: Set<string>): Promise<Map<string, ExistingMessage>> {
    if (keys.size === 0) return new Map();
    const rows = await this.reads.$queryRaw<
      Array<{ id: number | bigint; shopId: string; sourceId: string; status: string; dueAt: unknown }>
    >(Prisma.sql`SELECT "id", "shopId", "sourceId", "status", "dueAt" FROM "OutboxMessage" WHERE ${whereKeys(keys, 'sourceId')}`);
    return new Map(rows.map((r) => [keyOf(r.shopId, r.sourceId), { id: Number(r.id), status: r.status, dueAt: rawDate(r.dueAt)! }]));
  }

  /**
   * Orders already stored for these checkout tokens, and the latest order time per email (keys:
   * shop id and token or email): what decides that an abandoned checkout ended in a purchase.
   * One query per kind of key over all the shops, each term served by its (shopId, key,
   * eventName) index.
   */
  async ordersFor(tokens: Set<string>, emails: Set<string>): Promise<{ tokens: Set<string>; emailLatest: Map<string, Date> }> {
    const placed = Prisma.sql`"eventName" = 'order_placed'`;
    const byToken = tokens.size
      ? await this.reads.$queryRaw<Array<{ shopId: string; checkoutToken: string }>>(
          Prisma.sql`SELECT "shopId", "checkoutToken" FROM "OutboxMessage" WHERE ${placed} AND (${whereKeys(tokens, 'checkoutToken')})`,
        )
      : [];
    const byEmail = emails.size
      ? await this.reads.$queryRaw<Array<{ shopId: string; email: string; latest: unknown }>>(
          Prisma.sql`SELECT "shopId", "email", MAX("createdAt") AS "latest" FROM "OutboxMessage" WHERE ${placed} AND (${whereKeys(emails, 'email')}) GROUP BY "shopId", "email"`,
        )
      : [];
    const emailLatest = new Map<string, Date>();
    for (const r of byEmail) {
      const latest = rawDate(r.latest);
      if (latest) emailLatest.set(keyOf(r.shopId, r.email), latest);
    }
    return { tokens: new Set(byToken.map((r) => keyOf(r.shopId, r.checkoutToken))), emailLatest };
  }

  /** Applies a batch's plan in the caller's transaction. */
  async write(tx: Tx, plan: WritePlan, now: Date): Promise<void> {
    const pending = ['queued', 'held'];
    const stillPending = Prisma.sql`"status" IN (${Prisma.join(pending)})`;
    const stamped = (row: object) => setColumns(this.provider, { ...row, updatedAt: now });
    // an order ends the shopper's storefront abandonments (browse, cart) too, by email
    const byEmail = Prisma.join(['checkout_abandoned', ...STOREFRONT_ABANDONMENTS]);
    const terms: Prisma.Sql[] = [];
    for (const c of plan.cancels) {
      if (c.tokens.length)
        terms.push(
          Prisma.sql`("shopId" = ${c.shopId} AND "checkoutToken" IN (${Prisma.join(c.tokens)}) AND "eventName" = 'checkout_abandoned')`,
        );
      if (c.emails.length)
        terms.push(Prisma.sql`("shopId" = ${c.shopId} AND "email" IN (${Prisma.join(c.emails)}) AND "eventName" IN (${byEmail}))`);
    }
    if (terms.length) {
      // Two steps, each planned on its own index: the abandonments of these tokens and emails
      // through (shopId, checkoutToken|email, eventName), then the pending ones by id. One
      // statement that also names the status lets SQLite walk the shop's whole queue instead,
      // and a deep backlog would make every order slow (test/faults/deep-backlog.test.ts).
      const found = await tx.$queryRaw<Array<{ id: number | bigint; status: string }>>(
        Prisma.sql`SELECT "id", "status" FROM "OutboxMessage" WHERE ${anyOf(terms)}`,
      );
      const ids = found.filter((m) => pending.includes(m.status)).map((m) => Number(m.id));
      if (ids.length) {
        await tx.$executeRaw(Prisma.sql`
          UPDATE "OutboxMessage" SET ${stamped({ status: 'cancelled', lastError: 'the customer placed an order' })}
          WHERE "id" IN (${Prisma.join(ids)}) AND ${stillPending}`);
      }
    }
    for (const u of plan.abandonmentUpdates) {
      // only newer activity moves the abandonment, and only while it is still pending
      await tx.$executeRaw(Prisma.sql`
        UPDATE "OutboxMessage" SET ${stamped({ body: u.body, email: u.email, runAt: u.runAt, dueAt: u.runAt })}
        WHERE "id" = ${u.id} AND ${stillPending} AND "dueAt" <= ${this.sql.ts(u.runAt)}`);
    }
    for (const r of plan.replacements) {
      const { shopId: _s, sourceId: _i, ...row } = r.row;
      await tx.$executeRaw(Prisma.sql`UPDATE "OutboxMessage" SET ${stamped(row)} WHERE "id" = ${r.id} AND "status" = 'skipped'`);
    }
    await insertMessages(tx, this.provider, plan.inserts, now);
    // state rows: one upsert per kind, whatever the number of shops
    for (const c of plan.customerMessages) {
      if ('cancel' in c) {
        await tx.$executeRaw(
          Prisma.sql`UPDATE "OutboxMessage" SET ${stamped({ status: 'cancelled', lastError: c.cancel })} WHERE "id" = ${c.id} AND ${stillPending}`,
        );
      } else {
        await tx.$executeRaw(
          Prisma.sql`UPDATE "OutboxMessage" SET ${stamped({ body: c.body, email: c.email })} WHERE "id" = ${c.id} AND ${stillPending}`,
        );
      }
    }
    await mergeProfileRows(tx, this.provider, plan.profiles, mergeStored, now);
    for (const p of plan.purchases) {
      await tx.$executeRaw(Prisma.sql`
        UPDATE "ProductInterest" SET "boughtAt" = ${this.sql.ts(p.at)}
        WHERE "shopId" = ${p.shopId} AND "email" = ${p.email} AND "variantId" IN (${Prisma.join(p.variantIds)})`);
    }
    if (plan.orders.length) {
      await upsert(
        tx,
        'OrderSummary',
        ['shopId', 'orderId'],
        ['email', 'customerId', 'summary', 'updatedAt'],
        plan.orders.map(({ shopId, order }) => [
          shopId,
          order.orderId,
          order.email,
          order.customerId,
          JSON.stringify(order),
          this.sql.ts(now),
        ]),
      );
    }
    if (plan.fulfillments.length) {
      await upsert(
        tx,
        'FulfillmentState',
        ['shopId', 'fulfillmentId'],
        ['orderId', 'email', 'state', 'updatedAt'],
        plan.fulfillments.map(({ shopId, state }) => [
          shopId,
          state.fulfillmentId,
          state.orderId,
          state.email,
          JSON.stringify(state),
          this.sql.ts(now),
        ]),
      );
    }
  }
}

/** Terms joined with OR (each a parenthesised condition). */
function anyOf(terms: Prisma.Sql[]): Prisma.Sql {
  return Prisma.join(terms, ' OR ');
}

/** Keys of several shops as one raw condition (db/batch-sql.ts): these reads run for every batch. */
function whereKeys(keys: Iterable<string>, column: string): Prisma.Sql {
  return whereShopKeys(byShop(keys), column);
}

/**
 * INSERT ... ON CONFLICT (key) DO UPDATE for rows of one table, in one statement. The plan holds
 * one row per key (later receipts of the batch replaced earlier ones), as PostgreSQL requires.
 */
async function upsert(tx: Tx, table: string, key: string[], columns: string[], rows: unknown[][]): Promise<void> {
  const q = (c: string) => `"${c}"`;
  const values = rows.map((r) => Prisma.sql`(${Prisma.join(r)})`);
  await tx.$executeRaw(Prisma.sql`
    INSERT INTO ${Prisma.raw(q(table))} (${Prisma.raw([...key, ...columns].map(q).join(', '))}) VALUES ${Prisma.join(values)}
    ON CONFLICT (${Prisma.raw(key.map(q).join(', '))}) DO UPDATE SET ${Prisma.raw(columns.map((c) => `${q(c)} = excluded.${q(c)}`).join(', '))}`);
}
