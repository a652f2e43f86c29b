// Stage 2 for storefront batches (receipts of kind 'pixel'). State is read once per batch
// (PixelStore), each batch is decided in memory in arrival order against that state as the
// earlier batches left it, and nothing is written until the processor applies the plan in the
// batch's transaction. Per batch:
// - identity: the batch's email (logged-in customer, checkout contact step) ties its client id
//   to that email; later batches of the client id count for it. Events of a client id with no
//   email wait (PixelEvent, at most PIXEL_ANONYMOUS_HOURS), and count for the email it gives
//   within that window; the sweeper deletes the rest unsent.
// - events: viewed_product (one per product, shopper and hour: the source id carries the hour),
//   added_to_cart, and the browse and cart abandonments (sessions.ts).
// - consent: a batch whose visitor does not allow marketing sends nothing and keeps nothing.
import type { ReceiptOutcome } from '../intake/receipt-store';
import type { PixelStage, StagePlan } from '../intake/processor';
import { assemble, type Draft } from '../mapping/build';
import type { NewMessage } from '../mapping';
import type { Metrics } from '../observability/metrics';
import type { DueEntry } from '../outbox/due';
import { parseStoredSettings, type EventName, type Settings } from '../settings/settings';
import type { ParsedReceipt } from '../use-cases/forward-receipts';
import { toRow } from '../use-cases/store-messages';
import { digest } from './items';
import {
  addLine, addView, browseAttributes, cartAttributes, cartTotal, newBrowse, newCart, sessionOf, type Session, type Shopper,
} from './sessions';
import { emptyPixelPlan, keyOf, type PixelShop, type PixelStore, type Visitor } from './store';
import { eventOf, waitingRow } from './waiting';
import { readBatch, type ReadBatch, type StoreEvent } from './wire';

export const PIXEL_TOPIC = 'pixel/events';
const HOUR_MS = 3_600_000;

export interface PixelStageDeps {
  store: PixelStore;
  metrics: Metrics;
  now: () => Date;
  /** How long an anonymous visitor's events wait for an email. */
  anonymousMs: number;
  /** How long a client id stays tied to its email after it was last seen. */
  identityMs: number;
  browseDelayMs: number;
  cartDelayMs: number;
}

/** A message of the batch that is inserted only when the shop does not have its source id yet. */
interface Candidate {
  message: NewMessage;
  outcome: ReceiptOutcome;
  /** A view of this batch counted as accepted, to count as collapsed instead when the shop already has it. */
  countedView: boolean;
}

interface ShopCtx {
  shop: PixelShop;
  settings: Settings;
  status: 'queued' | 'held';
  candidates: Map<string, Candidate>;
  shoppers: Map<string, Shopper>;
  /** Sessions to write, with their shopper and the receipt that last moved them. */
  touched: Map<Session, { email: string; r: ParsedReceipt; outcome: ReceiptOutcome }>;
}

type Count = 'accepted' | 'collapsed' | 'waiting' | 'ignored' | 'no_consent' | 'invalid';

export function createPixelStage(deps: PixelStageDeps): PixelStage {
  const { store } = deps;
  const renewEvery = Math.min(86_400_000, deps.identityMs / 2);

  return async function pixelStage(items: ParsedReceipt[]): Promise<StagePlan> {
    const now = deps.now();
    const plan = emptyPixelPlan();
    const counts = new Map<Count, number>();
    const count = (what: Count, n = 1) => n !== 0 && counts.set(what, (counts.get(what) ?? 0) + n);
    const reads = items.map((r) => ({ r, b: readBatch(r.payload, r.receivedAt) }));

    // state, read once: shops, visitors of the batch's clients, waiting events of the clients
    // that give an email, pending abandonments of every email involved
    const shops = await store.shops([...new Set(reads.filter((x) => x.b.ok).map((x) => x.r.shopDomain))]);
    /** Why the batch's shop takes no storefront events now, or null when it does. */
    const refusal = (shop: PixelShop | undefined, b: ReadBatch): string | null => {
      if (!shop?.connection) return 'shop not connected';
      if (shop.uninstalledAt) return 'app uninstalled';
      return b.ok && shop.pixel && shop.pixel.state !== 'removed' && shop.pixel.key === b.key ? null : 'not the shop’s active pixel key';
    };
    const usable = (shop: PixelShop | undefined, b: ReadBatch): shop is PixelShop => refusal(shop, b) === null;
    const clients = new Map<string, Set<string>>();
    const add = (m: Map<string, Set<string>>, shopId: string, v: string) => m.set(shopId, (m.get(shopId) ?? new Set()).add(v));
    for (const { r, b } of reads) {
      const shop = shops.get(r.shopDomain);
      if (b.ok && usable(shop, b)) add(clients, shop.id, b.clientId);
    }
    const visitors = await store.visitors(clients);
    const live = (k: string): Visitor | undefined => {
      const v = visitors.get(k);
      return v && v.expiresAt > now ? v : undefined;
    };
    const identifying = new Map<string, Set<string>>();
    const emails = new Map<string, Set<string>>();
    for (const { r, b } of reads) {
      const shop = shops.get(r.shopDomain);
      if (!b.ok || !usable(shop, b)) continue;
      const v = live(keyOf(shop.id, b.clientId));
      if (b.marketing && b.email && !v) add(identifying, shop.id, b.clientId);
      for (const e of [b.marketing ? b.email : null, v?.email]) if (e) add(emails, shop.id, e);
    }
    const [stored, pending] = await Promise.all([store.waiting(identifying, now), store.pending(emails)]);

    const outcomes: ReceiptOutcome[] = [];
    const contexts = new Map<string, ShopCtx>();
    /** Anonymous events of this batch, by client, until they are identified or stored. */
    const waitingNew = new Map<string, Array<{ event: StoreEvent; r: ParsedReceipt }>>();
    const visitorWrites = new Map<string, { shopId: string; clientId: string } & Visitor>();

    for (const { r, b } of reads) {
      const outcome: ReceiptOutcome = { id: r.id, outcome: 'ignored', reason: null, messageCount: 0, customerId: null };
      outcomes.push(outcome);
      if (!b.ok) {
        Object.assign(outcome, { outcome: 'rejected', reason: b.reason });
        count('invalid', b.events);
        continue;
      }
      count('invalid', b.invalid);
      const shop = shops.get(r.shopDomain);
      const refused = refusal(shop, b);
      if (refused !== null || !shop) {
        outcome.reason = refused;
        count('ignored', b.events.length);
        continue;
      }
      const ctx = contextOf(shop);
      const ck = keyOf(shop.id, b.clientId);
      const visitor = visitorWrites.get(ck) ?? live(ck);

      if (!b.marketing) {
        // nothing of a visitor who does not allow marketing is kept, nor sent later
        plan.forget.push({ shopId: shop.id, clientId: b.clientId });
        waitingNew.delete(ck);
        stored.delete(ck);
        visitorWrites.delete(ck);
        visitors.delete(ck);
        if (visitor) {
          const s = shopperOf(ctx, visitor.email);
          cancel(ctx, s, 'browse', 'the shopper does not allow marketing');
          cancel(ctx, s, 'cart', 'the shopper does not allow marketing');
        }
        outcome.reason = 'the visitor does not allow marketing: nothing kept';
        count('no_consent', b.events.length);
        continue;
      }

      const email = b.email ?? visitor?.email ?? null;
      if (email === null) {
        // anonymous: what abandonment needs waits for an email
        const keep = b.events.filter((e) => e.kind !== 'other');
        if (keep.length) waitingNew.set(ck, [...(waitingNew.get(ck) ?? []), ...keep.map((event) => ({ event, r }))]);
        count('waiting', keep.length);
        count('ignored', b.events.length - keep.length);
        Object.assign(outcome, keep.length ? { outcome: 'accepted', reason: `visitor not identified yet: ${keep.length} event(s) wait for an email` } : { reason: 'nothing to keep from an anonymous visitor' });
        continue;
      }

      let replay: StoreEvent[] = [];
      if (b.email && !visitor) {
        // identified now: the client's waiting events count for this email, then go
        const rows = stored.get(ck) ?? [];
        if (rows.length) plan.stitched.push({ shopId: shop.id, clientId: b.clientId });
        stored.delete(ck);
        replay = [...rows.map(eventOf).filter((e): e is StoreEvent => e !== null), ...(waitingNew.get(ck) ?? []).map((w) => w.event)];
        waitingNew.delete(ck);
      }
      if (b.email && (!visitor || visitor.email !== b.email || visitor.expiresAt.getTime() < now.getTime() + deps.identityMs - renewEvery)) {
        const identifiedAt = visitor?.email === b.email ? visitor.identifiedAt : now;
        visitorWrites.set(ck, { shopId: shop.id, clientId: b.clientId, email: b.email, identifiedAt, expiresAt: new Date(now.getTime() + deps.identityMs) });
      } else if (!b.email && visitor && visitor.expiresAt.getTime() < now.getTime() + deps.identityMs - renewEvery) {
        visitorWrites.set(ck, { shopId: shop.id, clientId: b.clientId, ...visitor, expiresAt: new Date(now.getTime() + deps.identityMs) });
      }

      const shopper = shopperOf(ctx, email);
      for (const e of replay) apply(ctx, shopper, email, b.clientId, e, r, outcome, false);
      for (const e of b.events) count(apply(ctx, shopper, email, b.clientId, e, r, outcome, true));
      outcome.outcome = 'accepted';
    }

    // what was not identified waits; visitors are written
    for (const [ck, list] of waitingNew) {
      const [shopId, clientId] = ck.split('\u0000') as [string, string];
      for (const { event, r } of list) {
        const row = waitingRow(shopId, clientId, event, new Date(r.receivedAt.getTime() + deps.anonymousMs));
        if (row) plan.waiting.push(row);
      }
    }
    plan.visitors.push(...visitorWrites.values());

    const due: DueEntry[] = [];
    for (const ctx of contexts.values()) await settle(ctx, due);
    return {
      outcomes,
      due,
      async write(tx, at) {
        await store.write(tx, plan, at);
        for (const [outcome, n] of counts) deps.metrics.pixelEvents.inc({ outcome }, n);
      },
    };

    function contextOf(shop: PixelShop): ShopCtx {
      let ctx = contexts.get(shop.id);
      if (!ctx) {
        ctx = {
          shop, settings: parseStoredSettings(shop.settings?.data), status: shop.connection!.status === 'connected' ? 'queued' : 'held',
          candidates: new Map(), shoppers: new Map(), touched: new Map(),
        };
        contexts.set(shop.id, ctx);
      }
      return ctx;
    }

    function shopperOf(ctx: ShopCtx, email: string): Shopper {
      let s = ctx.shoppers.get(email);
      if (!s) {
        s = { browse: null, cart: null };
        for (const p of pending.get(keyOf(ctx.shop.id, email)) ?? []) {
          const session = sessionOf(p);
          if (session?.kind === 'browse') s.browse = session;
          else if (session?.kind === 'cart') s.cart = session;
        }
        ctx.shoppers.set(email, s);
      }
      return s;
    }

    /** Ends a pending session: a stored one is cancelled, one of this batch is never written. */
    function cancel(ctx: ShopCtx, s: Shopper, kind: 'browse' | 'cart', reason: string): void {
      const session = s[kind];
      if (!session) return;
      if (session.storedId !== null) plan.cancels.push({ id: session.storedId, reason });
      ctx.touched.delete(session);
      s[kind] = null;
    }

    /** A message of the batch (null when its event is turned off). */
    function message(ctx: ShopCtx, r: ParsedReceipt, email: string, draft: Draft): NewMessage | null {
      const out = assemble(
        { topic: PIXEL_TOPIC, payload: null, webhookId: r.webhookId, shopDomain: ctx.shop.domain, receivedAt: r.receivedAt, settings: ctx.settings },
        { email, noEmail: 'no email for the visitor', customerId: null, checkoutToken: null, contact: {} },
        [draft],
      );
      return out.messages[0] ?? out.upserts[0] ?? null;
    }

    function propose(ctx: ShopCtx, m: NewMessage | null, outcome: ReceiptOutcome, countedView: boolean): Count {
      if (!m) return 'ignored';
      if (ctx.candidates.has(m.sourceId)) return 'collapsed';
      ctx.candidates.set(m.sourceId, { message: m, outcome, countedView });
      return 'accepted';
    }

    /** One event of an identified shopper (`counted`: of this batch, not a waiting one); returns how to count it. */
    function apply(ctx: ShopCtx, s: Shopper, email: string, clientId: string, e: StoreEvent, r: ParsedReceipt, outcome: ReceiptOutcome, counted: boolean): Count {
      const on = (name: EventName) => ctx.settings.events[name];
      const occurredAt = e.at.toISOString();
      if (e.kind === 'view') {
        const p = e.product;
        const hour = Math.floor(e.at.getTime() / HOUR_MS);
        const m = message(ctx, r, email, { eventName: 'viewed_product', sourceId: `pixel:viewed:${digest(email)}:${p.product_id}:${hour}`, occurredAt, attributes: { ...p } });
        // a shopper with a pending cart abandonment is not also reminded of what they browsed
        if (on('browse_abandoned') && !s.cart) {
          s.browse ??= newBrowse(`pixel:browse:${digest(clientId, e.id)}`, e.at);
          addView(s.browse, p, new Date(r.receivedAt.getTime() + deps.browseDelayMs));
          ctx.touched.set(s.browse, { email, r, outcome });
        }
        return propose(ctx, m, outcome, counted);
      }
      if (e.kind === 'add') {
        cancel(ctx, s, 'browse', 'the shopper added to the cart');
        s.cart ??= newCart(`pixel:cart:${digest(clientId, e.id)}`, e.at);
        addLine(s.cart, e.line, new Date(r.receivedAt.getTime() + deps.cartDelayMs));
        if (on('cart_abandoned')) ctx.touched.set(s.cart, { email, r, outcome });
        const m = message(ctx, r, email, {
          eventName: 'added_to_cart', sourceId: `pixel:added:${digest(clientId, e.id)}`, occurredAt, attributes: { ...e.line, cart_total: cartTotal(s.cart) },
        });
        return propose(ctx, m, outcome, false);
      }
      if (e.kind === 'checkout') {
        // checkout_abandoned takes over from here
        cancel(ctx, s, 'browse', 'the shopper started a checkout');
        cancel(ctx, s, 'cart', 'the shopper started a checkout');
        return 'accepted';
      }
      return 'ignored';
    }

    /** Decides, against what the shop already has, what each candidate becomes; fills the plan. */
    async function settle(ctx: ShopCtx, due: DueEntry[]): Promise<void> {
      const shopId = ctx.shop.id;
      for (const [session, { email, r, outcome }] of ctx.touched) {
        if (!session.changed) continue;
        const eventName = session.kind === 'browse' ? 'browse_abandoned' : 'cart_abandoned';
        const attributes = session.kind === 'browse' ? browseAttributes(session) : cartAttributes(session);
        const m = message(ctx, r, email, { eventName, sourceId: session.sourceId, occurredAt: session.runAt.toISOString(), attributes, runAt: session.runAt, upsert: true });
        if (!m) continue;
        if (session.storedId !== null) {
          plan.updates.push({ id: session.storedId, body: JSON.stringify(m.body), runAt: m.runAt });
          due.push({ shopId, runAt: m.runAt });
        } else if (!ctx.candidates.has(m.sourceId)) {
          ctx.candidates.set(m.sourceId, { message: m, outcome, countedView: false });
        }
      }
      if (ctx.candidates.size === 0) return;
      const existing = await store.existing(shopId, [...ctx.candidates.keys()]);
      const opts = { shopId, status: ctx.status, heldReason: ctx.status === 'held' ? 'invalid_key' : null };
      for (const c of ctx.candidates.values()) {
        if (existing.has(c.message.sourceId)) {
          // a view of the same product by the same shopper within the hour
          if (c.countedView) {
            count('accepted', -1);
            count('collapsed');
          }
          continue;
        }
        const row = toRow(c.message, opts);
        plan.inserts.push(row);
        c.outcome.messageCount += 1;
        if (row.status === 'queued') due.push({ shopId, runAt: c.message.runAt });
      }
    }
  };
}
