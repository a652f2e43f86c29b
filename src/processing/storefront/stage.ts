// Stage 2 for storefront batches (receipts of kind 'pixel'), and for the emails the unit's signed
// webhooks vouch for. State is read once per batch (PixelStore), each receipt is decided in memory
// in arrival order against that state as the earlier receipts left it, and nothing is written until
// the processor applies the plan in the batch's transaction. Per batch:
// - products: the pixel names products by id; every title, price and URL sent is Shopify's
//   (resolve.ts). A product or variant the shop does not have is dropped and counted.
// - identity: an email a batch gives is a claim (trust.ts). A vouched email ties the batch's client
//   id to it; later batches of the client id count for it. Until then the claim waits, at most
//   PIXEL_CLAIM_MINUTES, and so do the visitor's events (PixelEvent, at most PIXEL_ANONYMOUS_HOURS):
//   a webhook of a later receipt that names the email applies the claim then, stitching those
//   events; the sweeper deletes whatever is never vouched, unsent.
// - events (shopper-events.ts): viewed_product, added_to_cart, and the browse and cart
//   abandonments, within each email's daily limits (PIXEL_EVENTS_PER_EMAIL_DAY,
//   PIXEL_ABANDONMENTS_PER_EMAIL_DAY).
// - consent: a batch whose visitor does not allow marketing sends nothing and keeps nothing.
import type { ReceiptOutcome } from '../../intake/receipt-store';
import type { PixelStage, StagePlan } from '../processor';
import type { Metrics } from '../../observability/metrics';
import type { DueEntry } from '../../outbox/due';
import type { CustomerLookup } from '../../integrations/shopify/customer-lookup';
import type { ProductCatalog, ProductRef } from '../../integrations/shopify/products';
import type { ParsedReceipt } from '../forward/forward-receipts';
import { ClaimBook } from './claims';
import type { EmailKeys } from './email-keys';
import { describeAll, withProducts } from './resolve';
import { PIXEL_TOPIC, ShopperEvents, type Count, type ShopCtx } from './shopper-events';
import { emptyPixelPlan, keyOf, type PixelShop, type PixelStore, type Visitor } from './store';
import { BatchTrust } from './trust';
import { vouchedEmails, vouchSourceOf, type VouchSource } from './vouch';
import { eventOf, waitingRow } from './waiting';
import { readBatch, type ReadBatch, type StoreEvent } from './wire';

const HOUR_MS = 3_600_000;

export interface PixelStageDeps {
  store: PixelStore;
  metrics: Metrics;
  now: () => Date;
  keys: EmailKeys;
  products: Pick<ProductCatalog, 'describe'>;
  customers: CustomerLookup;
  /** How long an anonymous visitor's events wait for an email. */
  anonymousMs: number;
  /** How long a client id stays tied to its email after it was last seen; also how long a vouch stands. */
  identityMs: number;
  browseDelayMs: number;
  cartDelayMs: number;
  /** How long a claim to an email waits for Shopify to vouch for it. */
  claimMs: number;
  eventsPerEmailDay: number;
  abandonmentsPerEmailDay: number;
  /** How long a batch waits for the Admin API (products, customers). Default 2000 ms. */
  lookupDeadlineMs?: number;
}

/** A step of the unit, in arrival order: a storefront batch, or an email a signed webhook named. */
type Step =
  | { kind: 'batch'; r: ParsedReceipt; b: ReadBatch }
  | { kind: 'vouch'; r: ParsedReceipt; shop: PixelShop; email: string; source: VouchSource };

const NOTHING: StagePlan = { outcomes: [], due: [], write: async () => undefined };

export function createPixelStage(deps: PixelStageDeps): PixelStage {
  const { store } = deps;
  const renewEvery = Math.min(86_400_000, deps.identityMs / 2);
  const add = <T>(m: Map<string, Set<T>>, shopId: string, v: T) => m.set(shopId, (m.get(shopId) ?? new Set()).add(v));

  return async function pixelStage(items: ParsedReceipt[], signed: ParsedReceipt[] = []): Promise<StagePlan> {
    const named = signed.flatMap((r) => {
      const source = vouchSourceOf(r.topic);
      return source ? vouchedEmails(r.topic, r.payload).map((email) => ({ r, email, source })) : [];
    });
    if (items.length === 0 && named.length === 0) return NOTHING;
    const now = deps.now();
    const deadline = Date.now() + (deps.lookupDeadlineMs ?? 2000);
    const plan = emptyPixelPlan();
    const counts = new Map<Count, number>();
    const claimCounts = { pending: 0, vouched: 0 };
    const dropped = { unknown: 0, unavailable: 0 };
    const count = (what: Count, n = 1) => n !== 0 && counts.set(what, (counts.get(what) ?? 0) + n);
    const reads = items.map((r) => ({ r, b: readBatch(r.payload, r.receivedAt) }));

    const shops = await store.shops([
      ...new Set([...reads.filter((x) => x.b.ok).map((x) => x.r.shopDomain), ...named.map((v) => v.r.shopDomain)]),
    ]);
    const takes = (shop: PixelShop | undefined): shop is PixelShop =>
      Boolean(shop?.connection && !shop.uninstalledAt && shop.pixel && shop.pixel.state !== 'removed');
    /** Why the batch's shop takes no storefront events now, or null when it does. */
    const refusal = (shop: PixelShop | undefined, b: ReadBatch): string | null => {
      if (!shop?.connection) return 'shop not connected';
      if (shop.uninstalledAt) return 'app uninstalled';
      return b.ok && takes(shop) && shop.pixel!.key === b.key ? null : 'not the shop’s active pixel key';
    };
    const usable = (shop: PixelShop | undefined, b: ReadBatch): shop is PixelShop => refusal(shop, b) === null;
    const vouches = named.flatMap((v) => {
      const shop = shops.get(v.r.shopDomain);
      return takes(shop) ? [{ ...v, shop }] : [];
    });
    if (reads.length === 0 && vouches.length === 0) return NOTHING;
    const trust = new BatchTrust(
      {
        keys: deps.keys,
        customers: deps.customers,
        vouchMs: deps.identityMs,
        eventsPerEmailDay: deps.eventsPerEmailDay,
        abandonmentsPerEmailDay: deps.abandonmentsPerEmailDay,
      },
      store,
      now,
    );
    const byId = new Map([...shops.values()].map((s) => [s.id, s]));

    // state, read once: visitors of the batch's clients, and the trust rows of every email involved
    const clients = new Map<string, Set<string>>();
    for (const { r, b } of reads) {
      const shop = shops.get(r.shopDomain);
      if (b.ok && usable(shop, b)) add(clients, shop.id, b.clientId);
    }
    const visitors = await store.visitors(clients);
    const live = (k: string): Visitor | undefined => {
      const v = visitors.get(k);
      return v && v.expiresAt > now ? v : undefined;
    };
    const emails = new Map<string, Set<string>>();
    const vouchedHere = new Set<string>();
    for (const v of vouches) vouchedHere.add(keyOf(v.shop.id, v.email));
    const claiming = new Map<string, Set<string>>();
    const refs = new Map<string, { shop: PixelShop; refs: ProductRef[] }>();
    for (const { r, b } of reads) {
      const shop = shops.get(r.shopDomain);
      if (!b.ok || !usable(shop, b) || !b.marketing) continue;
      const v = live(keyOf(shop.id, b.clientId));
      if (v) add(emails, shop.id, v.email);
      if (b.email) {
        add(emails, shop.id, b.email);
        if (v?.email !== b.email) add(claiming, shop.id, b.clientId);
      }
      const entry = refs.get(shop.id) ?? { shop, refs: [] };
      for (const e of b.events) if (e.kind === 'view' || e.kind === 'add') entry.refs.push(e.ref);
      refs.set(shop.id, entry);
    }
    await trust.load(emails);

    // the Admin API, for what the cache cannot answer: customers behind unvouched claims (unless a
    // webhook of this unit names them), and products; side by side, within the deadline
    const ask = new Map<string, Set<string>>();
    for (const { r, b } of reads) {
      const shop = shops.get(r.shopDomain);
      if (!b.ok || !usable(shop, b) || !b.marketing || !b.email) continue;
      if (live(keyOf(shop.id, b.clientId))?.email === b.email) continue;
      if (trust.isVouched(shop.id, b.email) || trust.isKnownUnknown(shop.id, b.email) || vouchedHere.has(keyOf(shop.id, b.email))) continue;
      add(ask, shop.id, b.email);
    }
    const [found, answers] = await Promise.all([trust.lookup(plan, byId, ask, deadline), describeAll(deps.products, refs, deadline)]);
    if (trust.apiCalls) deps.metrics.pixelAdminCalls.inc({ kind: 'customers' }, trust.apiCalls);
    if (answers.apiCalls) deps.metrics.pixelAdminCalls.inc({ kind: 'products' }, answers.apiCalls);

    // pending claims a vouch of this unit applies (webhooks, and lookups that found the customer)
    const vouchKeys = new Map<string, Set<string>>();
    for (const v of vouches) add(vouchKeys, v.shop.id, trust.key(v.shop.id, v.email));
    for (const [shopId, list] of found) for (const email of list) add(vouchKeys, shopId, trust.key(shopId, email));
    const storedClaims = await store.claims(vouchKeys, now);
    const claimClients = new Map<string, Set<string>>();
    for (const c of storedClaims) {
      add(claiming, c.shopId, c.clientId);
      if (!clients.get(c.shopId)?.has(c.clientId)) add(claimClients, c.shopId, c.clientId);
    }
    if (claimClients.size) for (const [k, v] of await store.visitors(claimClients)) visitors.set(k, v);
    if (storedClaims.length) {
      // the emails a webhook of the unit vouches for, that pending claims identify: their rows and abandonments too
      const claimed = new Set(storedClaims.map((c) => keyOf(c.shopId, c.emailKey)));
      for (const v of vouches) if (claimed.has(keyOf(v.shop.id, trust.key(v.shop.id, v.email)))) add(emails, v.shop.id, v.email);
      await trust.load(emails);
    }
    const [stored, pending] = await Promise.all([store.waiting(claiming, now), store.pending(emails)]);

    // the unit in arrival order: batches and the emails webhooks name, by receipt id
    const steps: Step[] = [
      ...reads.map(({ r, b }) => ({ kind: 'batch' as const, r, b })),
      ...vouches.map((v) => ({ kind: 'vouch' as const, ...v })),
    ];
    steps.sort((a, b) => a.r.id - b.r.id);

    const outcomes: ReceiptOutcome[] = [];
    const shopperEvents = new ShopperEvents({
      store,
      plan,
      trust,
      pending,
      browseDelayMs: deps.browseDelayMs,
      cartDelayMs: deps.cartDelayMs,
      count,
    });
    const contextOf = (shop: PixelShop) => shopperEvents.contextOf(shop);
    /** Anonymous events of this batch, by client, until they are identified or stored. */
    const waitingNew = new Map<string, Array<{ event: StoreEvent; r: ParsedReceipt }>>();
    const visitorWrites = new Map<string, { shopId: string; clientId: string } & Visitor>();
    const claims = new ClaimBook(storedClaims);
    // lookups answered before any receipt of the unit: their claims are applied first
    for (const [shopId, list] of found) {
      const shop = byId.get(shopId)!;
      for (const email of list) applyClaims(contextOf(shop), email, null);
    }

    for (const step of steps) {
      if (step.kind === 'vouch') {
        trust.vouch(plan, step.shop.id, step.email, step.source);
        applyClaims(contextOf(step.shop), step.email, step.r);
        continue;
      }
      const { r, b } = step;
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
        claims.forget(shop.id, b.clientId);
        if (visitor) {
          const s = shopperEvents.shopperOf(ctx, visitor.email);
          shopperEvents.cancel(ctx, s, 'browse', 'the shopper does not allow marketing');
          shopperEvents.cancel(ctx, s, 'cart', 'the shopper does not allow marketing');
        }
        outcome.reason = 'the visitor does not allow marketing: nothing kept';
        count('no_consent', b.events.length);
        continue;
      }

      const resolved = withProducts(shop.id, b.events, answers);
      dropped.unknown += resolved.unknown;
      dropped.unavailable += resolved.unavailable;
      ctx.stats.dropped += resolved.unknown;
      count('dropped', resolved.unknown + resolved.unavailable);
      const events = resolved.events;

      let email: string | null = visitor?.email ?? null;
      let claimed = false;
      if (b.email && visitor?.email !== b.email) {
        if (trust.isVouched(shop.id, b.email)) {
          identify(ctx, b.clientId, b.email, r, outcome);
          email = b.email;
        } else {
          // a claim: the visitor stays anonymous until Shopify names the email
          claim(shop.id, b.clientId, b.email);
          ctx.stats.pending += 1;
          claimCounts.pending += 1;
          email = null;
          claimed = true;
        }
      } else if (visitor && visitor.expiresAt.getTime() < now.getTime() + deps.identityMs - renewEvery) {
        visitorWrites.set(ck, { shopId: shop.id, clientId: b.clientId, ...visitor, expiresAt: new Date(now.getTime() + deps.identityMs) });
      }

      if (email === null) {
        // anonymous: what abandonment needs waits for a vouched email
        const keep = events.filter((e) => e.kind !== 'other');
        if (keep.length) waitingNew.set(ck, [...(waitingNew.get(ck) ?? []), ...keep.map((event) => ({ event, r }))]);
        count('waiting', keep.length);
        count('ignored', events.length - keep.length);
        const why = claimed ? 'the email is not vouched for by Shopify yet (claim pending)' : 'visitor not identified yet';
        Object.assign(
          outcome,
          keep.length
            ? { outcome: 'accepted', reason: `${why}: ${keep.length} event(s) wait for a vouched email` }
            : { reason: claimed ? `${why}: nothing to keep` : 'nothing to keep from an anonymous visitor' },
        );
        continue;
      }
      const shopper = shopperEvents.shopperOf(ctx, email);
      for (const e of events) count(shopperEvents.apply(ctx, shopper, email, b.clientId, e, r, outcome, true));
      outcome.outcome = 'accepted';
    }

    // what was not identified waits; visitors and claims are written
    for (const [ck, list] of waitingNew) {
      const [shopId, clientId] = ck.split('\u0000') as [string, string];
      for (const { event, r } of list) {
        const row = waitingRow(shopId, clientId, event, new Date(r.receivedAt.getTime() + deps.anonymousMs));
        if (row) plan.waiting.push(row);
      }
    }
    plan.visitors.push(...visitorWrites.values());
    claims.into(plan);

    const due: DueEntry[] = [];
    for (const ctx of shopperEvents.shops()) await shopperEvents.settle(ctx, due);
    trust.flush(plan);
    const hour = Math.floor(now.getTime() / HOUR_MS);
    for (const ctx of shopperEvents.shops()) plan.stats.push({ shopId: ctx.shop.id, hour, ...ctx.stats });
    return {
      outcomes,
      due,
      async write(tx, at) {
        await store.write(tx, plan, at);
        for (const [outcome, n] of counts) deps.metrics.pixelEvents.inc({ outcome }, n);
        for (const [outcome, n] of Object.entries(claimCounts)) if (n) deps.metrics.pixelClaims.inc({ outcome }, n);
        for (const [reason, n] of Object.entries(dropped)) if (n) deps.metrics.pixelProductsDropped.inc({ reason }, n);
      },
    };

    /** The client claims the email (its earlier claim, if any, is replaced). */
    function claim(shopId: string, clientId: string, email: string): void {
      claims.claim({ shopId, clientId, emailKey: trust.key(shopId, email) }, now, new Date(now.getTime() + deps.claimMs));
    }

    /** Shopify vouched for `email`: the clients claiming it are identified (`r`: the receipt that vouched; null: a lookup). */
    function applyClaims(ctx: ShopCtx, email: string, r: ParsedReceipt | null): void {
      const waiting = claims.claimants(ctx.shop.id, trust.key(ctx.shop.id, email));
      if (waiting.length === 0) return;
      const outcome: ReceiptOutcome = { id: r?.id ?? 0, outcome: 'accepted', reason: null, messageCount: 0, customerId: null };
      for (const clientId of waiting) {
        const receipt = r ?? {
          id: 0,
          webhookId: `pixel-claim:${clientId}`,
          shopDomain: ctx.shop.domain,
          topic: PIXEL_TOPIC,
          receivedAt: now,
          payload: null,
        };
        identify(ctx, clientId, email, receipt, outcome);
      }
    }

    /** Ties the client id to a vouched email; its waiting events (stored and of this batch) count for it, then go. */
    function identify(ctx: ShopCtx, clientId: string, email: string, r: ParsedReceipt, outcome: ReceiptOutcome): void {
      const shopId = ctx.shop.id;
      const ck = keyOf(shopId, clientId);
      const prior = visitorWrites.get(ck) ?? live(ck);
      const rows = stored.get(ck) ?? [];
      if (rows.length) plan.stitched.push({ shopId, clientId });
      stored.delete(ck);
      const replay = [...rows.map(eventOf).filter((e): e is StoreEvent => e !== null), ...(waitingNew.get(ck) ?? []).map((w) => w.event)];
      waitingNew.delete(ck);
      visitorWrites.set(ck, {
        shopId,
        clientId,
        email,
        identifiedAt: prior?.email === email ? prior.identifiedAt : now,
        expiresAt: new Date(now.getTime() + deps.identityMs),
      });
      claims.settle(shopId, clientId);
      ctx.stats.vouched += 1;
      claimCounts.vouched += 1;
      const shopper = shopperEvents.shopperOf(ctx, email);
      for (const e of replay) shopperEvents.apply(ctx, shopper, email, clientId, e, r, outcome, false);
    }
  };
}
