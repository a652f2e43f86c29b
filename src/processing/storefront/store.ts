// What stage 2 reads and writes for storefront batches, set-based: one raw statement per kind of
// state and batch across its shops (shops, visitors, waiting events, pending abandonments, vouched
// emails and pending identities; the existing source ids per shop), and one write per kind inside the batch's
// transaction (write()). Raw SQL rather than the ORM, whose per-query cost grows with the key
// lists.
import { Prisma } from '@prisma/client';
import { hasShopKeys, insertRows, setColumns, whereShopKeys as whereKeys } from '../../db/batch-sql';
import { dialectOf } from '../../db/dialects';
import { rawOf, type Db } from '../../db/client';
import type { SqlTx } from '../../db/transaction';
import { rawDate } from '../../db/raw';
import { Sql } from '../../db/sql';
import { insertMessages } from '../../outbox/store-messages';

type Tx = SqlTx;

/** The storefront's abandonment events: pending (queued or held) until they fire or are cancelled. */
export const STOREFRONT_ABANDONMENTS = ['browse_abandoned', 'cart_abandoned'] as const;
export type StorefrontAbandonment = (typeof STOREFRONT_ABANDONMENTS)[number];
const PENDING = ['queued', 'held'];

export interface StorefrontShop {
  id: string;
  domain: string;
  uninstalledAt: Date | null;
  connection: { status: string } | null;
  settings: { data: string } | null;
  pixel: { key: string; state: string } | null;
  /** The offline session's scopes (null: no session). */
  scope: string | null;
}

/** A PixelShopper row: an email's trust (by its key) and its quota of the day. */
export interface ShopperRow {
  state: string;
  expiresAt: Date;
  quotaDay: number;
  events: number;
  abandonments: number;
}

/**
 * A pending identity: a client id gave an email Shopify has not vouched for yet, by the email's key
 * (a PixelClaim row; the table keeps its name).
 */
export interface PendingIdentity {
  shopId: string;
  clientId: string;
  emailKey: string;
}

export interface Visitor {
  email: string;
  identifiedAt: Date;
  expiresAt: Date;
}

export interface WaitingRow {
  id: number;
  name: string;
  eventId: string;
  occurredAt: Date;
  data: string;
  waitsFor: string;
}

/** A row of a client's queue that waits for Shopify's product data, or behind one that does. */
export interface QueuedRow extends WaitingRow {
  clientId: string;
  describeAt: Date | null;
  attempts: number;
}

export interface PendingAbandonment {
  id: number;
  sourceId: string;
  eventName: StorefrontAbandonment;
  email: string;
  body: string;
}

export interface StorefrontPlan {
  /** Clients whose waiting events and identity go (consent withdrawn). */
  forget: Array<{ shopId: string; clientId: string }>;
  /** Waiting events that went: counted for an email, or dropped (their product is not the shop's). */
  eventsDone: number[];
  /** Waiting events described now that still wait for an email: their product data is Shopify's now. */
  eventsDescribed: Array<{ id: number; data: string }>;
  /** Waiting events whose product could not be described yet: the next lookup is due at describeAt. */
  eventsLater: Array<{ id: number; describeAt: Date }>;
  visitors: Array<{ shopId: string; clientId: string } & Visitor>;
  waiting: Prisma.PixelEventCreateManyInput[];
  inserts: Prisma.OutboxMessageCreateManyInput[];
  /** Pending abandonments that newer activity moves later (and adds to). */
  updates: Array<{ id: number; body: string; runAt: Date }>;
  /** Pending abandonments that later activity ended, with why. */
  cancels: Array<{ id: number; reason: string }>;
  /** Emails Shopify named (a webhook, a lookup that found the customer): vouched until expiresAt. */
  vouches: Array<{ shopId: string; emailKey: string; source: string; checkedAt: Date; expiresAt: Date }>;
  /** Emails a lookup found no customer for (a vouched row stays vouched). */
  unknown: Array<{ shopId: string; emailKey: string; checkedAt: Date; expiresAt: Date }>;
  /** The day's counts of emails that got events (rows created for an identity when missing). */
  quotas: Array<{
    shopId: string;
    emailKey: string;
    quotaDay: number;
    events: number;
    abandonments: number;
    checkedAt: Date;
    expiresAt: Date;
  }>;
  /** Pending identities left waiting (one per client: it replaces the client's earlier one). */
  pendingIdentities: Array<{ shopId: string; clientId: string; emailKey: string; claimedAt: Date; expiresAt: Date }>;
  /** Clients whose pending identity is settled (identified). */
  pendingIdentitiesDone: Array<{ shopId: string; clientId: string }>;
  /** Increments of the shops' hourly counts. */
  stats: Array<{ shopId: string; hour: number; pending: number; vouched: number; dropped: number; limited: number }>;
  /** Identified shoppers' views and adds to cart of variants (product-alerts), one per shop, email and variant. */
  interests: Map<string, InterestRow>;
}

/** A ProductInterest row as the batch leaves it: each time the latest of what the batch saw. */
export interface InterestRow {
  shopId: string;
  email: string;
  variantId: string;
  productId: string;
  viewedAt: Date | null;
  cartedAt: Date | null;
  soldOutAt: Date | null;
  expiresAt: Date;
}

export const emptyStorefrontPlan = (): StorefrontPlan => ({
  interests: new Map(),
  forget: [],
  eventsDone: [],
  eventsDescribed: [],
  eventsLater: [],
  visitors: [],
  waiting: [],
  inserts: [],
  updates: [],
  cancels: [],
  vouches: [],
  unknown: [],
  quotas: [],
  pendingIdentities: [],
  pendingIdentitiesDone: [],
  stats: [],
});

/** Keys of per-shop state: shop id and the object's id. */
export const keyOf = (shopId: string, id: string) => `${shopId}\u0000${id}`;

export class StorefrontStore {
  private readonly sql: Sql;

  constructor(private readonly db: Db) {
    this.sql = new Sql(db, rawOf(db).provider);
  }

  async shops(domains: string[]): Promise<Map<string, StorefrontShop>> {
    if (domains.length === 0) return new Map();
    const rows = await this.db.$queryRaw<
      Array<{
        id: string;
        domain: string;
        uninstalledAt: unknown;
        status: string | null;
        data: string | null;
        key: string | null;
        state: string | null;
        scope: string | null;
      }>
    >(Prisma.sql`
      SELECT "s"."id", "s"."domain", "s"."uninstalledAt", "c"."status", "t"."data", "p"."key", "p"."state", "o"."scope"
      FROM "Shop" AS "s"
      LEFT JOIN "Connection" AS "c" ON "c"."shopId" = "s"."id"
      LEFT JOIN "ShopSettings" AS "t" ON "t"."shopId" = "s"."id"
      LEFT JOIN "WebPixel" AS "p" ON "p"."shopId" = "s"."id"
      LEFT JOIN "Session" AS "o" ON "o"."id" = 'offline_' || "s"."domain"
      WHERE "s"."domain" IN (${Prisma.join(domains)})`);
    return new Map(
      rows.map((r) => [
        r.domain,
        {
          id: r.id,
          domain: r.domain,
          uninstalledAt: rawDate(r.uninstalledAt),
          connection: r.status === null ? null : { status: r.status },
          settings: r.data === null ? null : { data: r.data },
          pixel: r.key === null ? null : { key: r.key, state: r.state! },
          scope: r.scope,
        },
      ]),
    );
  }

  /** Identified visitors among these clients, by keyOf(shopId, clientId). */
  async visitors(clients: Map<string, Set<string>>): Promise<Map<string, Visitor>> {
    const out = new Map<string, Visitor>();
    if (!hasShopKeys(clients)) return out;
    const rows = await this.db.$queryRaw<
      Array<{ shopId: string; clientId: string; email: string; identifiedAt: unknown; expiresAt: unknown }>
    >(
      Prisma.sql`SELECT "shopId", "clientId", "email", "identifiedAt", "expiresAt" FROM "PixelVisitor" WHERE ${whereKeys(clients, 'clientId')}`,
    );
    for (const r of rows)
      out.set(keyOf(r.shopId, r.clientId), { email: r.email, identifiedAt: rawDate(r.identifiedAt)!, expiresAt: rawDate(r.expiresAt)! });
    return out;
  }

  /** Events of these (anonymous) clients that wait for an email, still inside their window, oldest first. */
  async waiting(clients: Map<string, Set<string>>, now: Date): Promise<Map<string, WaitingRow[]>> {
    const out = new Map<string, WaitingRow[]>();
    if (!hasShopKeys(clients)) return out;
    const rows = await this.db.$queryRaw<
      Array<{ id: number | bigint; shopId: string; clientId: string; name: string; eventId: string; occurredAt: unknown; data: string }>
    >(Prisma.sql`
      SELECT "id", "shopId", "clientId", "name", "eventId", "occurredAt", "data" FROM "PixelEvent"
      WHERE "expiresAt" > ${this.sql.ts(now)} AND "waitsFor" = 'email' AND (${whereKeys(clients, 'clientId')}) ORDER BY "id"`);
    for (const { id, shopId, clientId, occurredAt, ...row } of rows) {
      const k = keyOf(shopId, clientId);
      const list = out.get(k) ?? [];
      list.push({ ...row, id: Number(id), occurredAt: rawDate(occurredAt)!, waitsFor: 'email' });
      out.set(k, list);
    }
    return out;
  }

  /**
   * The queues of these clients that wait for Shopify's product data (rows waiting for a product,
   * and the rows behind them), still inside their window, oldest first, by keyOf(shopId, clientId).
   */
  async queues(clients: Map<string, Set<string>>, now: Date): Promise<Map<string, QueuedRow[]>> {
    const out = new Map<string, QueuedRow[]>();
    if (!hasShopKeys(clients)) return out;
    const rows = await this.db.$queryRaw<
      Array<{
        id: number | bigint;
        shopId: string;
        clientId: string;
        name: string;
        eventId: string;
        occurredAt: unknown;
        data: string;
        waitsFor: string;
        describeAt: unknown;
        attempts: number | bigint;
      }>
    >(Prisma.sql`
      SELECT "id", "shopId", "clientId", "name", "eventId", "occurredAt", "data", "waitsFor", "describeAt", "attempts" FROM "PixelEvent"
      WHERE "expiresAt" > ${this.sql.ts(now)} AND "waitsFor" <> 'email' AND (${whereKeys(clients, 'clientId')}) ORDER BY "id"`);
    for (const { id, shopId, occurredAt, describeAt, attempts, ...row } of rows) {
      const k = keyOf(shopId, row.clientId);
      const list = out.get(k) ?? [];
      list.push({ ...row, id: Number(id), occurredAt: rawDate(occurredAt)!, describeAt: rawDate(describeAt), attempts: Number(attempts) });
      out.set(k, list);
    }
    return out;
  }

  /** Clients of the shop with an event whose next product lookup is due, at most `limit` (the longest due first). */
  async dueClients(shopId: string, now: Date, limit: number): Promise<string[]> {
    const rows = await this.db.$queryRaw<Array<{ clientId: string }>>(Prisma.sql`
      SELECT "clientId" FROM "PixelEvent" WHERE "shopId" = ${shopId} AND "describeAt" <= ${this.sql.ts(now)} AND "expiresAt" > ${this.sql.ts(now)}
      GROUP BY "clientId" ORDER BY MIN("describeAt") LIMIT ${this.sql.int(limit)}`);
    return rows.map((r) => r.clientId);
  }

  /** Pending storefront abandonments of these emails, by keyOf(shopId, email). */
  async pending(emails: Map<string, Set<string>>): Promise<Map<string, PendingAbandonment[]>> {
    const out = new Map<string, PendingAbandonment[]>();
    if (!hasShopKeys(emails)) return out;
    // served by the (shopId, email, eventName) index; the status is checked here, because
    // naming it in the query lets SQLite choose a status index and walk the shop's queue
    const rows = await this.db.$queryRaw<
      Array<{
        id: number | bigint;
        shopId: string;
        sourceId: string;
        eventName: StorefrontAbandonment;
        email: string;
        body: string;
        status: string;
      }>
    >(Prisma.sql`
      SELECT "id", "shopId", "sourceId", "eventName", "email", "body", "status" FROM "OutboxMessage"
      WHERE "eventName" IN (${Prisma.join([...STOREFRONT_ABANDONMENTS])}) AND (${whereKeys(emails, 'email')}) ORDER BY "id"`);
    for (const { status, id, shopId, ...r } of rows) {
      if (!PENDING.includes(status)) continue;
      const k = keyOf(shopId, r.email);
      const list = out.get(k) ?? [];
      list.push({ ...r, id: Number(id) });
      out.set(k, list);
    }
    return out;
  }

  /** Trust and quota rows of these email keys, by keyOf(shopId, emailKey). */
  async shoppers(keys: Map<string, Set<string>>): Promise<Map<string, ShopperRow>> {
    const out = new Map<string, ShopperRow>();
    if (!hasShopKeys(keys)) return out;
    const rows = await this.db.$queryRaw<
      Array<{
        shopId: string;
        emailKey: string;
        state: string;
        expiresAt: unknown;
        quotaDay: number | bigint;
        events: number | bigint;
        abandonments: number | bigint;
      }>
    >(Prisma.sql`
      SELECT "shopId", "emailKey", "state", "expiresAt", "quotaDay", "events", "abandonments" FROM "PixelShopper" WHERE ${whereKeys(keys, 'emailKey')}`);
    for (const r of rows) {
      out.set(keyOf(r.shopId, r.emailKey), {
        state: r.state,
        expiresAt: rawDate(r.expiresAt)!,
        quotaDay: Number(r.quotaDay),
        events: Number(r.events),
        abandonments: Number(r.abandonments),
      });
    }
    return out;
  }

  /** Pending identities of these email keys, still within their window, oldest first. */
  async pendingIdentities(keys: Map<string, Set<string>>, now: Date): Promise<PendingIdentity[]> {
    if (!hasShopKeys(keys)) return [];
    return this.db.$queryRaw<PendingIdentity[]>(Prisma.sql`
      SELECT "shopId", "clientId", "emailKey" FROM "PixelClaim"
      WHERE "expiresAt" > ${this.sql.ts(now)} AND (${whereKeys(keys, 'emailKey')}) ORDER BY "claimedAt"`);
  }

  /** Source ids the shop already has (a repeated view within the hour, an event seen before). */
  async existing(shopId: string, sourceIds: string[]): Promise<Set<string>> {
    if (sourceIds.length === 0) return new Set();
    const rows = await this.db.$queryRaw<Array<{ sourceId: string }>>(
      Prisma.sql`SELECT "sourceId" FROM "OutboxMessage" WHERE "shopId" = ${shopId} AND "sourceId" IN (${Prisma.join(sourceIds)})`,
    );
    return new Set(rows.map((r) => r.sourceId));
  }

  /** Applies a batch's plan in the caller's transaction (raw SQL: set-based, one statement per kind). */
  async write(tx: Tx, plan: StorefrontPlan, now: Date): Promise<void> {
    const clients = (rows: Array<{ shopId: string; clientId: string }>) => whereKeys(clientsByShop(rows), 'clientId');
    if (plan.forget.length) await tx.$executeRaw(Prisma.sql`DELETE FROM "PixelEvent" WHERE ${clients(plan.forget)}`);
    await this.writeQueues(tx, plan);
    // a client's pending identity goes once settled; a new one replaces the one it had
    const settled = [...plan.forget, ...plan.pendingIdentitiesDone, ...plan.pendingIdentities];
    if (settled.length) await tx.$executeRaw(Prisma.sql`DELETE FROM "PixelClaim" WHERE ${clients(settled)}`);
    // a visitor written again replaces the row it had
    const visitorsGone = [...plan.forget, ...plan.visitors];
    if (visitorsGone.length) await tx.$executeRaw(Prisma.sql`DELETE FROM "PixelVisitor" WHERE ${clients(visitorsGone)}`);
    const { provider } = this.sql;
    await insertRows(tx, provider, 'PixelVisitor', plan.visitors);
    await insertRows(tx, provider, 'PixelEvent', plan.waiting);
    await insertRows(tx, provider, 'PixelClaim', plan.pendingIdentities);
    await this.writeShoppers(tx, plan);
    await upsertRows(
      tx,
      provider,
      'PixelStat',
      sumStats(plan.stats),
      (s) => keyOf(s.shopId, String(s.hour)),
      Prisma.sql`${Prisma.raw(
        ` ON CONFLICT ("shopId", "hour") DO UPDATE SET ${STAT_COUNTS.map((c) => `"${c}" = "PixelStat"."${c}" + excluded."${c}"`).join(', ')}`,
      )}`,
    );
    const stamped = (row: object) => setColumns(provider, { ...row, updatedAt: now });
    const pending = Prisma.join(PENDING);
    const reasons = new Map<string, number[]>();
    for (const c of plan.cancels) reasons.set(c.reason, [...(reasons.get(c.reason) ?? []), c.id]);
    for (const [reason, ids] of reasons) {
      await tx.$executeRaw(Prisma.sql`
        UPDATE "OutboxMessage" SET ${stamped({ status: 'cancelled', lastError: reason })}
        WHERE "id" IN (${Prisma.join(ids)}) AND "status" IN (${pending})`);
    }
    for (const u of plan.updates) {
      // only while still pending: a message already being sent is left as it is
      await tx.$executeRaw(Prisma.sql`
        UPDATE "OutboxMessage" SET ${stamped({ body: u.body, runAt: u.runAt, dueAt: u.runAt })}
        WHERE "id" = ${u.id} AND "status" IN (${pending})`);
    }
    await insertMessages(tx, provider, plan.inserts, now);
    await this.writeInterests(tx, [...plan.interests.values()]);
  }

  /** Interests: each time the later of the row's and the batch's (a view or add never moves one back). */
  private async writeInterests(tx: Tx, rows: InterestRow[]): Promise<void> {
    const d = dialectOf(this.sql.provider);
    const later = (c: string) => {
      const [a, b] = [`"ProductInterest"."${c}"`, `excluded."${c}"`];
      return `"${c}" = CASE WHEN ${a} IS NULL THEN ${b} WHEN ${b} IS NULL THEN ${a} ELSE ${d.greatest(a, b)} END`;
    };
    await upsertRows(
      tx,
      this.sql.provider,
      'ProductInterest',
      rows,
      (r) => keyOf(r.shopId, `${r.email}\u0000${r.variantId}`),
      Prisma.raw(
        ` ON CONFLICT ("shopId", "email", "variantId") DO UPDATE SET "productId" = excluded."productId", ${['viewedAt', 'cartedAt', 'soldOutAt', 'expiresAt'].map(later).join(', ')}`,
      ),
    );
  }

  /** Waiting events that went, were described, or wait longer for their product (their rows, by id). */
  private async writeQueues(tx: Tx, plan: StorefrontPlan): Promise<void> {
    for (let from = 0; from < plan.eventsDone.length; from += 500)
      await tx.$executeRaw(Prisma.sql`DELETE FROM "PixelEvent" WHERE "id" IN (${Prisma.join(plan.eventsDone.slice(from, from + 500))})`);
    for (let from = 0; from < plan.eventsDescribed.length; from += 500) {
      const values = plan.eventsDescribed
        .slice(from, from + 500)
        .map((d) => Prisma.sql`(CAST(${d.id} AS INTEGER), CAST(${d.data} AS TEXT))`);
      await tx.$executeRaw(Prisma.sql`
        WITH "v" ("id", "data") AS (VALUES ${Prisma.join(values)})
        UPDATE "PixelEvent" SET "data" = "v"."data", "waitsFor" = 'email', "describeAt" = NULL
        FROM "v" WHERE "PixelEvent"."id" = "v"."id"`);
    }
    const later = new Map<number, number[]>();
    for (const l of plan.eventsLater) later.set(l.describeAt.getTime(), [...(later.get(l.describeAt.getTime()) ?? []), l.id]);
    for (const [at, ids] of later) {
      for (let from = 0; from < ids.length; from += 500)
        await tx.$executeRaw(Prisma.sql`
          UPDATE "PixelEvent" SET "describeAt" = ${this.sql.ts(new Date(at))}, "attempts" = "attempts" + 1
          WHERE "id" IN (${Prisma.join(ids.slice(from, from + 500))})`);
    }
  }

  /** Trust and quota rows: vouches, then negative lookups (never over a live vouch), then the day's counts. */
  private async writeShoppers(tx: Tx, plan: StorefrontPlan): Promise<void> {
    const { provider } = this.sql;
    const key = (r: { shopId: string; emailKey: string }) => keyOf(r.shopId, r.emailKey);
    const head = Prisma.raw(' ON CONFLICT ("shopId", "emailKey") DO UPDATE SET ');
    const trust = Prisma.raw(
      '"state" = excluded."state", "source" = excluded."source", "checkedAt" = excluded."checkedAt", "expiresAt" = excluded."expiresAt"',
    );
    await upsertRows(
      tx,
      provider,
      'PixelShopper',
      plan.vouches.map((v) => ({ ...v, state: 'vouched' })),
      key,
      Prisma.sql`${head}${trust}`,
    );
    await upsertRows(
      tx,
      provider,
      'PixelShopper',
      plan.unknown.map((u) => ({ ...u, state: 'unknown', source: 'admin_api' })),
      key,
      Prisma.sql`${head}${trust} WHERE "PixelShopper"."state" <> 'vouched' OR "PixelShopper"."expiresAt" <= excluded."checkedAt"`,
    );
    // an identified visitor's email was vouched when it identified: a row that expired since comes back as such
    await upsertRows(
      tx,
      provider,
      'PixelShopper',
      plan.quotas.map((q) => ({ ...q, state: 'vouched', source: 'identity' })),
      key,
      Prisma.sql`${head}${Prisma.raw('"quotaDay" = excluded."quotaDay", "events" = excluded."events", "abandonments" = excluded."abandonments"')}`,
    );
  }
}

const STAT_COUNTS = ['pending', 'vouched', 'dropped', 'limited'] as const;

/** One row per shop and hour, the increments added up. */
function sumStats(rows: StorefrontPlan['stats']): StorefrontPlan['stats'] {
  const out = new Map<string, StorefrontPlan['stats'][number]>();
  for (const r of rows) {
    const k = keyOf(r.shopId, String(r.hour));
    const cur = out.get(k);
    if (!cur) out.set(k, { ...r });
    else for (const c of STAT_COUNTS) cur[c] += r[c];
  }
  return [...out.values()].filter((r) => STAT_COUNTS.some((c) => r[c] !== 0));
}

/**
 * Multi-row INSERTs with a conflict clause, in the caller's transaction; a row whose `key` repeats
 * counts once (the last), since one statement may not change a row twice. Dates as insertRows writes them.
 */
async function upsertRows<T extends object>(
  tx: Tx,
  provider: 'sqlite' | 'postgres',
  table: string,
  rows: readonly T[],
  key: (r: T) => string,
  conflict: Prisma.Sql,
): Promise<void> {
  const unique = [...new Map(rows.map((r) => [key(r), r])).values()];
  if (unique.length === 0) return;
  const columns = Object.keys(unique[0]!);
  const value = dialectOf(provider).value;
  for (let from = 0; from < unique.length; from += 500) {
    const values = unique
      .slice(from, from + 500)
      .map((r) => Prisma.sql`(${Prisma.join(columns.map((c) => value((r as Record<string, unknown>)[c])))})`);
    await tx.$executeRaw(
      Prisma.sql`${Prisma.raw(`INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES `)}${Prisma.join(values)}${conflict}`,
    );
  }
}

/** Client ids grouped by shop. */
function clientsByShop(rows: Array<{ shopId: string; clientId: string }>): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const r of rows) out.set(r.shopId, (out.get(r.shopId) ?? new Set()).add(r.clientId));
  return out;
}
