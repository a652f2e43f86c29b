// Who the storefront visitors of a stage-2 unit are, and the transitions that change it. Per client
// id (by keyOf(shopId, clientId)) the unit holds:
// - its visitor: the stored row (PixelVisitor) while it is live, or the unit's rewrite of it. A
//   visitor ties the client id to an email Shopify vouched for, until identityMs after it was last
//   seen; later batches of the client id count for that email;
// - its pending identity (pending-identities.ts): an email it gave that Shopify has not vouched for
//   yet, while the visitor stays anonymous;
// - its waiting events (queues.ts): for an email (an anonymous visitor's), or for their product's
//   data, and those behind them.
// The transitions: identify (a vouched email), addPending (an email not vouched for yet),
// identifyPending (Shopify vouched for an email: every client waiting on it is identified), seen
// (an identified visitor came back), forget (consent withdrawn: all of it goes, and its shopper's
// pending abandonments are cancelled). into() puts what changed into the plan.
import type { ReceiptOutcome } from '../../intake/receipt-store';
import type { ParsedReceipt } from '../unit';
import type { PendingIdentities } from './pending-identities';
import type { ClientQueues, DrainResult } from './queues';
import type { Answers } from './resolve';
import type { Waiting, WaitsFor } from './waiting';
import { PIXEL_TOPIC, type ShopCtx, type ShopperEvents } from './shopper-events';
import { keyOf, type StorefrontPlan, type Visitor } from './store';
import type { BatchTrust } from './trust';
import type { UnitCounts } from './unit-counts';

const DAY_MS = 86_400_000;

export interface IdentitiesDeps {
  plan: StorefrontPlan;
  now: Date;
  /** How long a client id stays tied to its email after it was last seen. */
  identityMs: number;
  /** How long a pending identity waits for Shopify to vouch for its email. */
  pendingIdentityMs: number;
  trust: BatchTrust;
  events: ShopperEvents;
  counts: UnitCounts;
  /** Shopify's products, as the unit knows them: the held events are described with them. */
  answers: Answers;
}

export class Identities {
  /** Visitors this unit writes (identified, or seen again), by client. */
  private readonly writes = new Map<string, { shopId: string; clientId: string } & Visitor>();
  /** A visitor's tie to its email is written again once it has run down by this much (not at each batch). */
  private readonly renewEvery: number;

  constructor(
    private readonly deps: IdentitiesDeps,
    /** The stored visitors, as read. */
    private readonly visitors: Map<string, Visitor>,
    private readonly pending: PendingIdentities,
    private readonly queues: ClientQueues,
  ) {
    this.renewEvery = Math.min(DAY_MS, deps.identityMs / 2);
  }

  /** The client's visitor as the unit leaves it so far, or none (an anonymous client). */
  visitorOf(ck: string): Visitor | undefined {
    const stored = this.visitors.get(ck);
    return this.writes.get(ck) ?? (stored && stored.expiresAt > this.deps.now ? stored : undefined);
  }

  /**
   * Ties the client id to a vouched email; its events waiting for an email (stored and of this
   * unit) count for it, then go. Those held behind one waiting for its product go when it does.
   */
  identify(ctx: ShopCtx, clientId: string, email: string, r: ParsedReceipt, outcome: ReceiptOutcome): void {
    const { now, events } = this.deps;
    const shopId = ctx.shop.id;
    const ck = keyOf(shopId, clientId);
    const prior = this.visitorOf(ck);
    const replay = this.queues.takeForEmail(ck);
    this.writes.set(ck, {
      shopId,
      clientId,
      email,
      identifiedAt: prior?.email === email ? prior.identifiedAt : now,
      expiresAt: new Date(now.getTime() + this.deps.identityMs),
    });
    this.pending.settle(shopId, clientId);
    ctx.stats.vouched += 1;
    this.deps.counts.identity('vouched');
    const shopper = events.shopperOf(ctx, email);
    for (const e of replay) events.apply(ctx, shopper, email, clientId, e, r, outcome, false);
    if (this.queues.held(ck)) this.drain(ctx, clientId, r, outcome);
  }

  /** The client gave an email Shopify has not vouched for: it stays anonymous until Shopify does (its earlier pending one is replaced). */
  addPending(ctx: ShopCtx, clientId: string, email: string): void {
    const { now, trust } = this.deps;
    const shopId = ctx.shop.id;
    this.pending.add({ shopId, clientId, emailKey: trust.key(shopId, email) }, now, new Date(now.getTime() + this.deps.pendingIdentityMs));
    ctx.stats.pending += 1;
    this.deps.counts.identity('pending');
  }

  /** Shopify vouched for `email`: the clients waiting on it are identified (`r`: the receipt that vouched; null: a lookup). */
  identifyPending(ctx: ShopCtx, email: string, r: ParsedReceipt | null): void {
    const clientIds = this.pending.clientsOf(ctx.shop.id, this.deps.trust.key(ctx.shop.id, email));
    if (clientIds.length === 0) return;
    const outcome: ReceiptOutcome = { id: r?.id ?? 0, outcome: 'accepted', reason: null, messageCount: 0, customerId: null };
    for (const clientId of clientIds) {
      const receipt = r ?? {
        id: 0,
        webhookId: `pixel-identified:${clientId}`,
        shopDomain: ctx.shop.domain,
        topic: PIXEL_TOPIC,
        receivedAt: this.deps.now,
        payload: null,
      };
      this.identify(ctx, clientId, email, receipt, outcome);
    }
  }

  /** An identified visitor came back: its tie to the email is renewed once it has run down by renewEvery. */
  seen(shopId: string, clientId: string, visitor: Visitor): void {
    const { now, identityMs } = this.deps;
    if (visitor.expiresAt.getTime() >= now.getTime() + identityMs - this.renewEvery) return;
    this.writes.set(keyOf(shopId, clientId), { shopId, clientId, ...visitor, expiresAt: new Date(now.getTime() + identityMs) });
  }

  /**
   * The visitor does not allow marketing: nothing of it is kept (its waiting events, pending
   * identity and identity go with the plan's forget), nor sent later (its shopper's pending
   * abandonments are cancelled).
   */
  forget(ctx: ShopCtx, clientId: string): void {
    const shopId = ctx.shop.id;
    const ck = keyOf(shopId, clientId);
    const visitor = this.visitorOf(ck);
    this.deps.plan.forget.push({ shopId, clientId });
    this.queues.forget(ck);
    this.writes.delete(ck);
    this.visitors.delete(ck);
    this.pending.forget(shopId, clientId);
    if (visitor) {
      const { events } = this.deps;
      const s = events.shopperOf(ctx, visitor.email);
      events.cancel(ctx, s, 'browse', 'the shopper does not allow marketing');
      events.cancel(ctx, s, 'cart', 'the shopper does not allow marketing');
    }
  }

  /** The client's queue holds an event waiting for its product (later events wait behind it). */
  held(ck: string): boolean {
    return this.queues.held(ck);
  }

  /** An event of this unit waits behind the client's others; returns what it waits for. */
  wait(ck: string, w: Waiting, r: ParsedReceipt): WaitsFor {
    return this.queues.push(ck, w, r);
  }

  /**
   * The client's events held behind one not described yet, in order, with this unit's answers: an
   * identified visitor's count for their email now; an anonymous one's wait for an email.
   */
  drain(ctx: ShopCtx, clientId: string, r: ParsedReceipt, outcome: ReceiptOutcome): DrainResult {
    const { events, counts } = this.deps;
    const visitor = this.visitorOf(keyOf(ctx.shop.id, clientId));
    const shopper = visitor ? events.shopperOf(ctx, visitor.email) : null;
    const res = this.queues.drain(
      keyOf(ctx.shop.id, clientId),
      this.deps.answers,
      visitor && shopper ? (e) => void events.apply(ctx, shopper, visitor.email, clientId, e, r, outcome, false) : null,
    );
    counts.count('described', res.described);
    counts.drop(ctx, 'unknown', res.dropped.unknown);
    counts.drop(ctx, 'no_scope', res.dropped.no_scope);
    return res;
  }

  /** What waits is kept; visitors and pending identities are written. */
  into(plan: StorefrontPlan): void {
    this.queues.into(plan);
    plan.visitors.push(...this.writes.values());
    this.pending.into(plan);
  }
}
