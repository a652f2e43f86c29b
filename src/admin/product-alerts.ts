// Back in stock and price drops as the merchant sees them: the theme editor's link that adds the
// notify-me block, the subscriptions still waiting per product and variant, the last restocks and
// price drops Shopify signalled with how each ended, and the week's counts of back_in_stock and
// price_dropped messages. Counts and products only: no shopper's email leaves this module.
//
// Cost: every read is one shop's index range. Waiting subscriptions through StockSubscription's
// (shopId, variantId, email) key; signals through ProductSignal's (shopId, sourceId) key (a shop's
// signals of the last week and those pending); messages waiting now through OutboxMessage's
// (status, shopId, …) index, delivered ones through (shopId, status, deliveredAt), as
// /api/stats reads its last 24 hours; titles through ProductInfo's (shopId, productId) key.
import { Prisma } from '@prisma/client';
import type { Db, DbProvider } from '../db/client';
import { rawDate } from '../db/raw';
import { Sql } from '../db/sql';
import { fromRow, type CachedProduct } from '../integrations/shopify/product-cache';

/** The notify-me app block's handle: its file name in extensions/notify-me/blocks/. */
export const NOTIFY_ME_BLOCK = 'notify-me';
export const PRODUCT_ALERT_EVENTS = ['back_in_stock', 'price_dropped'] as const;
export type ProductAlertEvent = (typeof PRODUCT_ALERT_EVENTS)[number];
/** The window of the counts of messages. */
export const ALERT_TOTALS_DAYS = 7;
export const WAITING_LIMIT = { default: 50, max: 200 } as const;
export const RECENT_LIMIT = { default: 20, max: 50 } as const;

const DAY_MS = 86_400_000;
const EVENT_OF_KIND: Record<string, ProductAlertEvent> = { restock: 'back_in_stock', price_drop: 'price_dropped' };

export interface WaitingVariant {
  product_id: string;
  variant_id: string;
  /** From the product cache (Shopify's catalog); null while the product is not cached. */
  product_title: string | null;
  variant_title: string | null;
  /** Whether Shopify last said it can be bought; null when unknown. */
  available: boolean | null;
  subscribers: number;
  /** When the oldest of these subscriptions was made. */
  since: string;
}

export interface RecentSignal {
  id: string;
  kind: 'restock' | 'price_drop';
  event_name: ProductAlertEvent;
  product_id: string;
  variant_id: string;
  product_title: string | null;
  variant_title: string | null;
  /** pending (waiting its turn, or for Shopify), done, dropped. */
  state: string;
  /** Why it ended as it did, or what the last try met. */
  note: string | null;
  /** Messages queued for it. */
  queued: number;
  /** A price drop's new and previous price, in the shop's currency. */
  price: number | null;
  previous_price: number | null;
  currency: string | null;
  created_at: string;
  updated_at: string;
}

export interface AlertTotals {
  window_days: number;
  /** Subscriptions not told yet and not expired, and the variants they wait for. */
  waiting_subscribers: number;
  waiting_variants: number;
  /** Per event: messages queued by the window's signals, delivered in the window, and waiting to be sent now. */
  events: Record<ProductAlertEvent, { queued: number; delivered: number; waiting: number }>;
}

export interface ProductAlertsView {
  theme_editor_url: string;
  waiting: WaitingVariant[];
  /** More variants have waiting subscribers than `waiting` lists. */
  waiting_truncated: boolean;
  recent: RecentSignal[];
  totals: AlertTotals;
}

export interface ProductAlertsViewDeps {
  db: Db;
  provider: DbProvider;
  /** The app's client id (SHOPIFY_API_KEY): the block's id in the theme editor is `{client id}/{handle}`. */
  apiKey: string;
  now?: () => Date;
}

/**
 * Shopify's deep link that opens the shop's live theme in the theme editor, on a product page,
 * with the notify-me block ready to add to the main section.
 */
export function themeEditorUrl(shopDomain: string, apiKey: string): string {
  return `https://${shopDomain}/admin/themes/current/editor?template=product&addAppBlockId=${encodeURIComponent(apiKey)}/${NOTIFY_ME_BLOCK}&target=mainSection`;
}

const iso = (d: Date) => d.toISOString();

export function createProductAlertsView(deps: ProductAlertsViewDeps) {
  const { db } = deps;
  const now = deps.now ?? (() => new Date());
  const sql = new Sql(db, deps.provider);

  async function cachedProducts(shopId: string, productIds: string[]): Promise<Map<string, CachedProduct>> {
    if (productIds.length === 0) return new Map();
    const rows = await db.productInfo.findMany({ where: { shopId, productId: { in: productIds } } });
    return new Map(rows.map((r) => [r.productId, fromRow(r)]));
  }

  const titles = (products: Map<string, CachedProduct>, productId: string, variantId: string) => {
    const p = products.get(productId);
    const v = p?.variants[variantId];
    return {
      product_title: p?.title ?? null,
      variant_title: v?.title ?? null,
      available: v?.available ?? null,
      currency: p?.currency ?? null,
    };
  };

  return {
    async view(shop: { id: string; domain: string }, q: { waitingLimit?: number; recentLimit?: number } = {}): Promise<ProductAlertsView> {
      const shopId = shop.id;
      const t = now();
      const since = new Date(t.getTime() - ALERT_TOTALS_DAYS * DAY_MS);
      const waitingLimit = q.waitingLimit ?? WAITING_LIMIT.default;
      const [groups, counted, signals, week, outstanding, delivered] = await Promise.all([
        // raw: MIN of a timestamp comes back as the provider stores it (epoch ms on SQLite)
        sql.query<{ productId: string; variantId: string; n: number | bigint; since: unknown }>(Prisma.sql`
          SELECT "productId", "variantId", COUNT(*) AS n, MIN("createdAt") AS since FROM "StockSubscription"
          WHERE "shopId" = ${shopId} AND "notifiedAt" IS NULL AND "expiresAt" > ${sql.ts(t)}
          GROUP BY "productId", "variantId"
          ORDER BY COUNT(*) DESC, "variantId"
          LIMIT ${waitingLimit + 1}`),
        sql.query<{ n: number | bigint; v: number | bigint }>(Prisma.sql`
          SELECT COUNT(*) AS n, COUNT(DISTINCT "variantId") AS v FROM "StockSubscription"
          WHERE "shopId" = ${shopId} AND "notifiedAt" IS NULL AND "expiresAt" > ${sql.ts(t)}`),
        db.productSignal.findMany({
          where: { shopId },
          orderBy: { id: 'desc' },
          take: q.recentLimit ?? RECENT_LIMIT.default,
        }),
        db.productSignal.groupBy({ by: ['kind'], where: { shopId, createdAt: { gte: since } }, _sum: { queued: true } }),
        db.outboxMessage.groupBy({
          by: ['eventName'],
          where: { status: { in: ['queued', 'delivering', 'held'] }, shopId, eventName: { in: [...PRODUCT_ALERT_EVENTS] } },
          _count: { _all: true },
        }),
        db.outboxMessage.groupBy({
          by: ['eventName'],
          where: {
            shopId,
            status: { in: ['delivered', 'delivered_unconfirmed'] },
            deliveredAt: { gte: since },
            eventName: { in: [...PRODUCT_ALERT_EVENTS] },
          },
          _count: { _all: true },
        }),
      ]);

      const listed = groups.slice(0, waitingLimit);
      const products = await cachedProducts(shopId, [...new Set([...listed.map((g) => g.productId), ...signals.map((s) => s.productId)])]);

      const waiting: WaitingVariant[] = listed.map((g) => {
        const { currency: _, ...names } = titles(products, g.productId, g.variantId);
        return {
          product_id: g.productId,
          variant_id: g.variantId,
          ...names,
          subscribers: Number(g.n),
          since: iso(rawDate(g.since) ?? t),
        };
      });

      const recent: RecentSignal[] = signals.map((s) => {
        const { product_title, variant_title, currency } = titles(products, s.productId, s.variantId);
        const kind = s.kind === 'price_drop' ? 'price_drop' : 'restock';
        return {
          id: String(s.id),
          kind,
          event_name: EVENT_OF_KIND[kind]!,
          product_id: s.productId,
          variant_id: s.variantId,
          product_title,
          variant_title,
          state: s.state,
          note: s.note,
          queued: s.queued,
          price: s.price,
          previous_price: s.previousPrice,
          currency: s.price !== null ? currency : null,
          created_at: iso(s.createdAt),
          updated_at: iso(s.updatedAt),
        };
      });

      const events = Object.fromEntries(
        PRODUCT_ALERT_EVENTS.map((name) => [
          name,
          {
            queued: week.find((w) => EVENT_OF_KIND[w.kind] === name)?._sum.queued ?? 0,
            delivered: delivered.find((d) => d.eventName === name)?._count._all ?? 0,
            waiting: outstanding.find((o) => o.eventName === name)?._count._all ?? 0,
          },
        ]),
      ) as AlertTotals['events'];

      return {
        theme_editor_url: themeEditorUrl(shop.domain, deps.apiKey),
        waiting,
        waiting_truncated: groups.length > waitingLimit,
        recent,
        totals: {
          window_days: ALERT_TOTALS_DAYS,
          waiting_subscribers: Number(counted[0]?.n ?? 0),
          waiting_variants: Number(counted[0]?.v ?? 0),
          events,
        },
      };
    },
  };
}

export type ProductAlertsViewUseCase = ReturnType<typeof createProductAlertsView>;
