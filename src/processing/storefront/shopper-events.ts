// What an identified shopper's storefront events become, per shop, for one stage-2 batch:
// viewed_product (one per product, shopper and hour: the source id carries the hour),
// added_to_cart, and the browse and cart abandonments (abandonment-windows.ts), each message proposed in
// arrival order, then settled against what the shop already has and each email's daily limits
// (trust.ts). Everything lands in the batch's plan; nothing is written here.
import type { ReceiptOutcome } from '../../intake/receipt-store';
import { assemble, type Draft } from '../../mapping/build';
import type { NewMessage } from '../../mapping';
import type { DueEntry } from '../../outbox/due';
import { parseStoredSettings, type EventName, type Settings } from '../../settings/settings';
import type { ParsedReceipt } from '../unit';
import { toRow } from '../../outbox/store-messages';
import { digest } from './items';
import {
  addLine,
  addView,
  browseAttributes,
  cartAttributes,
  cartTotal,
  newBrowse,
  newCart,
  windowOf,
  type AbandonmentWindow,
  type Shopper,
} from './abandonment-windows';
import {
  keyOf,
  STOREFRONT_ABANDONMENTS,
  type PendingAbandonment,
  type StorefrontPlan,
  type StorefrontShop,
  type StorefrontStore,
} from './store';
import type { BatchTrust } from './trust';
import type { StoreEvent } from './wire';

export const PIXEL_TOPIC = 'pixel/events';
/**
 * A receipt of kind 'pixel' the app stores itself (retries.ts): the shop's storefront events whose
 * products were not described yet are due for another lookup. Stage 2 takes it in the shop's
 * arrival order, like the storefront's batches.
 */
export const PIXEL_RETRY_TOPIC = 'pixel/describe';
const HOUR_MS = 3_600_000;

export type Count =
  'accepted' | 'collapsed' | 'waiting' | 'waiting_for_product' | 'described' | 'ignored' | 'no_consent' | 'invalid' | 'dropped' | 'limited';

/** A message of the batch that is inserted only when the shop does not have its source id yet. */
interface Candidate {
  message: NewMessage;
  outcome: ReceiptOutcome;
  /** Counted as accepted (an event of this batch, not a waiting one). */
  counted: boolean;
  /** A view, which counts as collapsed instead when the shop already has it. */
  view: boolean;
}

export interface ShopCtx {
  shop: StorefrontShop;
  settings: Settings;
  status: 'queued' | 'held';
  candidates: Map<string, Candidate>;
  shoppers: Map<string, Shopper>;
  /** Abandonment windows to write, with their shopper and the receipt that last moved them. */
  touched: Map<AbandonmentWindow, { email: string; r: ParsedReceipt; outcome: ReceiptOutcome }>;
  /** This batch's increments of the shop's hourly trust counts. */
  stats: { pending: number; vouched: number; dropped: number; limited: number };
}

export interface ShopperEventsDeps {
  store: StorefrontStore;
  plan: StorefrontPlan;
  trust: BatchTrust;
  /** Pending storefront abandonments of the batch's emails, by keyOf(shopId, email). */
  pending: Map<string, PendingAbandonment[]>;
  /** A shop's settings until its merchant changes them: its abandonment delays and per-email limits among them. */
  settingsDefaults: Settings;
  /** How long a view or add counts for back in stock and price drops (INTEREST_MS). */
  interestMs?: number;
  count(what: Count, n?: number): void;
}

/** How long a shopper's view or add to cart of a variant counts for back in stock (price drops use 14 days of it). */
export const INTEREST_MS = 30 * 86_400_000;

export class ShopperEvents {
  private readonly contexts = new Map<string, ShopCtx>();

  constructor(private readonly deps: ShopperEventsDeps) {}

  /** The batch's state of a shop (its connection taken as it is: a shop without one takes no events). */
  contextOf(shop: StorefrontShop): ShopCtx {
    let ctx = this.contexts.get(shop.id);
    if (!ctx) {
      ctx = {
        shop,
        settings: parseStoredSettings(shop.settings?.data, this.deps.settingsDefaults),
        status: shop.connection!.status === 'connected' ? 'queued' : 'held',
        candidates: new Map(),
        shoppers: new Map(),
        touched: new Map(),
        stats: { pending: 0, vouched: 0, dropped: 0, limited: 0 },
      };
      this.contexts.set(shop.id, ctx);
    }
    return ctx;
  }

  shops(): ShopCtx[] {
    return [...this.contexts.values()];
  }

  shopperOf(ctx: ShopCtx, email: string): Shopper {
    let s = ctx.shoppers.get(email);
    if (!s) {
      s = { browse: null, cart: null };
      for (const p of this.deps.pending.get(keyOf(ctx.shop.id, email)) ?? []) {
        const w = windowOf(p);
        if (w?.kind === 'browse') s.browse = w;
        else if (w?.kind === 'cart') s.cart = w;
      }
      ctx.shoppers.set(email, s);
    }
    return s;
  }

  /** Ends a pending abandonment window: a stored one is cancelled, one of this batch is never written. */
  cancel(ctx: ShopCtx, s: Shopper, kind: 'browse' | 'cart', reason: string): void {
    const w = s[kind];
    if (!w) return;
    if (w.storedId !== null) this.deps.plan.cancels.push({ id: w.storedId, reason });
    ctx.touched.delete(w);
    s[kind] = null;
  }

  /** One event of an identified shopper (`counted`: of this batch, not a waiting one); returns how to count it. */
  apply(
    ctx: ShopCtx,
    s: Shopper,
    email: string,
    clientId: string,
    e: StoreEvent,
    r: ParsedReceipt,
    outcome: ReceiptOutcome,
    counted: boolean,
  ): Count {
    const on = (name: EventName) => ctx.settings.events[name];
    const occurredAt = e.at.toISOString();
    if (e.kind === 'view' || e.kind === 'add') this.interest(ctx, email, e);
    if (e.kind === 'view') {
      const p = e.product;
      const hour = Math.floor(e.at.getTime() / HOUR_MS);
      const m = this.message(ctx, r, email, {
        eventName: 'viewed_product',
        sourceId: `pixel:viewed:${digest(email)}:${p.product_id}:${hour}`,
        occurredAt,
        attributes: { ...p },
      });
      // a shopper with a pending cart abandonment is not also reminded of what they browsed
      if (on('browse_abandoned') && !s.cart) {
        s.browse ??= newBrowse(`pixel:browse:${digest(clientId, e.id)}`, e.at);
        addView(s.browse, p, new Date(r.receivedAt.getTime() + ctx.settings.browse_abandonment_delay_minutes * 60_000));
        ctx.touched.set(s.browse, { email, r, outcome });
      }
      return this.propose(ctx, m, outcome, counted, true);
    }
    if (e.kind === 'add') {
      this.cancel(ctx, s, 'browse', 'the shopper added to the cart');
      s.cart ??= newCart(`pixel:cart:${digest(clientId, e.id)}`, e.at);
      addLine(s.cart, e.line, new Date(r.receivedAt.getTime() + ctx.settings.cart_abandonment_delay_minutes * 60_000));
      if (on('cart_abandoned')) ctx.touched.set(s.cart, { email, r, outcome });
      const m = this.message(ctx, r, email, {
        eventName: 'added_to_cart',
        sourceId: `pixel:added:${digest(clientId, e.id)}`,
        occurredAt,
        attributes: { ...e.line, cart_total: cartTotal(s.cart) },
      });
      return this.propose(ctx, m, outcome, counted, false);
    }
    if (e.kind === 'checkout') {
      // checkout_abandoned takes over from here
      this.cancel(ctx, s, 'browse', 'the shopper started a checkout');
      this.cancel(ctx, s, 'cart', 'the shopper started a checkout');
      return 'accepted';
    }
    return 'ignored';
  }

  /** Decides, against what the shop already has and each email's limits, what each candidate becomes; fills the plan. */
  async settle(ctx: ShopCtx, due: DueEntry[]): Promise<void> {
    const { plan, trust, count } = this.deps;
    const shopId = ctx.shop.id;
    for (const [w, { email, r, outcome }] of ctx.touched) {
      if (!w.changed) continue;
      const eventName = w.kind === 'browse' ? 'browse_abandoned' : 'cart_abandoned';
      const attributes = w.kind === 'browse' ? browseAttributes(w) : cartAttributes(w);
      const m = this.message(ctx, r, email, {
        eventName,
        sourceId: w.sourceId,
        occurredAt: w.runAt.toISOString(),
        attributes,
        runAt: w.runAt,
        upsert: true,
      });
      if (!m) continue;
      if (w.storedId !== null) {
        plan.updates.push({ id: w.storedId, body: JSON.stringify(m.body), runAt: m.runAt });
        due.push({ shopId, runAt: m.runAt });
      } else if (!ctx.candidates.has(m.sourceId)) {
        ctx.candidates.set(m.sourceId, { message: m, outcome, counted: false, view: false });
      }
    }
    if (ctx.candidates.size === 0) return;
    const existing = await this.deps.store.existing(shopId, [...ctx.candidates.keys()]);
    const opts = { shopId, status: ctx.status, heldReason: ctx.status === 'held' ? 'invalid_key' : null };
    for (const c of ctx.candidates.values()) {
      if (existing.has(c.message.sourceId)) {
        // a view of the same product by the same shopper within the hour
        if (c.counted && c.view) {
          count('accepted', -1);
          count('collapsed');
        }
        continue;
      }
      const m = c.message;
      const kind = (STOREFRONT_ABANDONMENTS as readonly string[]).includes(m.eventName) ? 'abandonments' : 'events';
      const limit = kind === 'events' ? ctx.settings.storefront_events_per_email_day : ctx.settings.storefront_abandonments_per_email_day;
      if (m.email !== null && !trust.spend(shopId, m.email, kind, limit)) {
        // over the email's limit of the day: not sent
        ctx.stats.limited += 1;
        if (c.counted) count('accepted', -1);
        count('limited');
        continue;
      }
      const row = toRow(m, opts);
      plan.inserts.push(row);
      c.outcome.messageCount += 1;
      if (row.status === 'queued') due.push({ shopId, runAt: m.runAt });
    }
  }

  /** A view or add of a variant: what back in stock and price drops go out on (ProductInterest). */
  private interest(ctx: ShopCtx, email: string, e: Extract<StoreEvent, { kind: 'view' | 'add' }>): void {
    const item = e.kind === 'view' ? e.product : e.line;
    if (item.variant_id === null) return;
    const key = keyOf(ctx.shop.id, `${email}\u0000${item.variant_id}`);
    const row = this.deps.plan.interests.get(key) ?? {
      shopId: ctx.shop.id,
      email,
      variantId: item.variant_id,
      productId: item.product_id,
      viewedAt: null,
      cartedAt: null,
      soldOutAt: null,
      expiresAt: e.at,
    };
    const later = (a: Date | null) => (a === null || e.at > a ? e.at : a);
    if (e.kind === 'view') row.viewedAt = later(row.viewedAt);
    else row.cartedAt = later(row.cartedAt);
    if (e.soldOut) row.soldOutAt = later(row.soldOutAt);
    const until = new Date(e.at.getTime() + (this.deps.interestMs ?? INTEREST_MS));
    if (until > row.expiresAt) row.expiresAt = until;
    this.deps.plan.interests.set(key, row);
  }

  /** A message of the batch (null when its event is turned off). */
  private message(ctx: ShopCtx, r: ParsedReceipt, email: string, draft: Draft): NewMessage | null {
    const out = assemble(
      {
        topic: PIXEL_TOPIC,
        payload: null,
        webhookId: r.webhookId,
        shopDomain: ctx.shop.domain,
        receivedAt: r.receivedAt,
        settings: ctx.settings,
      },
      { email, noEmail: 'no email for the visitor', customerId: null, checkoutToken: null, contact: {} },
      [draft],
    );
    return out.messages[0] ?? out.upserts[0] ?? null;
  }

  private propose(ctx: ShopCtx, m: NewMessage | null, outcome: ReceiptOutcome, counted: boolean, view: boolean): Count {
    if (!m) return 'ignored';
    if (ctx.candidates.has(m.sourceId)) return 'collapsed';
    ctx.candidates.set(m.sourceId, { message: m, outcome, counted, view });
    return 'accepted';
  }
}
