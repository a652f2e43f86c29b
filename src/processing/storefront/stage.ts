// Stage 2 for storefront batches (receipts of kind 'pixel'), and for the emails the unit's signed
// webhooks vouch for. State is read once per batch (StorefrontStore), each receipt is decided in memory
// in arrival order against that state as the earlier receipts left it, and nothing is written until
// the processor applies the plan in the batch's transaction. Per batch:
// - products: the pixel names products by id; every title, price and URL sent is Shopify's
//   (resolve.ts). A product or variant the shop does not have is dropped and counted. One Shopify
//   has not described yet (slow, throttled, failing, over budget) waits in its client's queue
//   (queues.ts), at most PIXEL_ANONYMOUS_HOURS, and the visitor's later events wait behind it; a
//   later unit describes it (a retry receipt of its shop, retries.ts, or the client's next batch)
//   and it goes the way it would have gone at once. The unit's deadline decides only when.
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
import type { DriverPlan, StorefrontStage } from '../plan';
import type { Metrics } from '../../observability/metrics';
import type { DueEntry } from '../../outbox/due';
import type { CustomerLookup } from '../../integrations/shopify/customer-lookup';
import type { ProductCatalog, ProductRef } from '../../integrations/shopify/products';
import type { ParsedReceipt } from '../unit';
import { PendingIdentities } from './pending-identities';
import type { EmailKeys } from './email-keys';
import type { Logger } from '../../observability/logger';
import { LogOnce } from '../../observability/log-once';
import { ClientQueues, heldRefs, type DrainResult } from './queues';
import { describeAll, resolve, type Answers } from './resolve';
import { PIXEL_RETRY_TOPIC, PIXEL_TOPIC, ShopperEvents, type Count, type ShopCtx } from './shopper-events';
import { emptyStorefrontPlan, keyOf, type StorefrontShop, type StorefrontStore, type Visitor } from './store';
import { BatchTrust } from './trust';
import { vouchedEmails, vouchSourceOf, type VouchSource } from './vouch';
import { readBatch, type ReadBatch } from './wire';

const HOUR_MS = 3_600_000;
/**
 * How long a unit waits for the Admin API (products, customers). A product not described by then
 * waits for a later unit; a claim stays pending.
 */
export const LOOKUP_DEADLINE_MS = 2_000;
/** Clients whose events wait for their products, drained per retry receipt of a shop (the rest at the next). */
export const RETRY_CLIENTS = 200;

export interface StorefrontStageDeps {
  store: StorefrontStore;
  metrics: Metrics;
  logger: Logger;
  now: () => Date;
  keys: EmailKeys;
  products: Pick<ProductCatalog, 'describe'>;
  customers: CustomerLookup;
  /** How long an event waits for an email (an anonymous visitor's) or for its product's data. */
  anonymousMs: number;
  /** How long a client id stays tied to its email after it was last seen; also how long a vouch stands. */
  identityMs: number;
  browseDelayMs: number;
  cartDelayMs: number;
  /** How long a pending identity waits for Shopify to vouch for its email (PIXEL_CLAIM_MINUTES). */
  pendingIdentityMs: number;
  eventsPerEmailDay: number;
  abandonmentsPerEmailDay: number;
  /** How long a unit waits for the Admin API (LOOKUP_DEADLINE_MS). */
  lookupDeadlineMs?: number;
  /** The jitter of the waiting events' backoff (Math.random; tests pin it). */
  random?: () => number;
}

/** A step of the unit, in arrival order: a storefront batch, an email a signed webhook named, or a shop's retry. */
type Step =
  | { kind: 'batch'; r: ParsedReceipt; b: ReadBatch }
  | { kind: 'vouch'; r: ParsedReceipt; shop: StorefrontShop; email: string; source: VouchSource }
  | { kind: 'retry'; r: ParsedReceipt };

const NOTHING: DriverPlan = { outcomes: [], due: [], write: async () => undefined };

export function createStorefrontStage(deps: StorefrontStageDeps): StorefrontStage {
  const { store } = deps;
  const renewEvery = Math.min(86_400_000, deps.identityMs / 2);
  const add = <T>(m: Map<string, Set<T>>, shopId: string, v: T) => m.set(shopId, (m.get(shopId) ?? new Set()).add(v));
  // why a shop's events wait for their products: once per shop and quarter of an hour
  const waitLog = new LogOnce(deps.logger, 15 * 60_000, () => deps.now().getTime());

  return async function storefrontStage(items: ParsedReceipt[], signed: ParsedReceipt[] = []): Promise<DriverPlan> {
    const named = signed.flatMap((r) => {
      const source = vouchSourceOf(r.topic);
      return source ? vouchedEmails(r.topic, r.payload).map((email) => ({ r, email, source })) : [];
    });
    if (items.length === 0 && named.length === 0) return NOTHING;
    const now = deps.now();
    const deadline = Date.now() + (deps.lookupDeadlineMs ?? LOOKUP_DEADLINE_MS);
    const plan = emptyStorefrontPlan();
    const counts = new Map<Count, number>();
    const claimCounts = { pending: 0, vouched: 0 };
    const dropped = { unknown: 0, no_scope: 0 };
    const count = (what: Count, n = 1) => n !== 0 && counts.set(what, (counts.get(what) ?? 0) + n);
    const retries = items.filter((r) => r.topic === PIXEL_RETRY_TOPIC);
    const reads = items.filter((r) => r.topic !== PIXEL_RETRY_TOPIC).map((r) => ({ r, b: readBatch(r.payload, r.receivedAt) }));

    const shops = await store.shops([
      ...new Set([
        ...reads.filter((x) => x.b.ok).map((x) => x.r.shopDomain),
        ...named.map((v) => v.r.shopDomain),
        ...retries.map((r) => r.shopDomain),
      ]),
    ]);
    const takes = (shop: StorefrontShop | undefined): shop is StorefrontShop =>
      Boolean(shop?.connection && !shop.uninstalledAt && shop.pixel && shop.pixel.state !== 'removed');
    /** Why the batch's shop takes no storefront events now, or null when it does. */
    const refusal = (shop: StorefrontShop | undefined, b: ReadBatch): string | null => {
      if (!shop?.connection) return 'shop not connected';
      if (shop.uninstalledAt) return 'app uninstalled';
      return b.ok && takes(shop) && shop.pixel!.key === b.key ? null : 'not the shop’s active pixel key';
    };
    const usable = (shop: StorefrontShop | undefined, b: ReadBatch): shop is StorefrontShop => refusal(shop, b) === null;
    const vouches = named.flatMap((v) => {
      const shop = shops.get(v.r.shopDomain);
      return takes(shop) ? [{ ...v, shop }] : [];
    });
    if (reads.length === 0 && vouches.length === 0 && retries.length === 0) return NOTHING;
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

    // state, read once: visitors of the batch's clients and of the clients a retry drains, their
    // events waiting for products, and the trust rows of every email involved
    const clients = new Map<string, Set<string>>();
    for (const { r, b } of reads) {
      const shop = shops.get(r.shopDomain);
      if (b.ok && usable(shop, b)) add(clients, shop.id, b.clientId);
    }
    /** The clients each retry receipt drains (none for a shop that takes no storefront events now). */
    const retryWork = new Map<number, { shop: StorefrontShop; clientIds: string[] }>();
    const retryShops = new Set<string>();
    for (const r of retries) {
      const shop = shops.get(r.shopDomain);
      if (!takes(shop) || retryShops.has(shop.id)) continue;
      retryShops.add(shop.id);
      const clientIds = await store.dueClients(shop.id, now, RETRY_CLIENTS);
      retryWork.set(r.id, { shop, clientIds });
      for (const c of clientIds) add(clients, shop.id, c);
    }
    const [visitors, held] = await Promise.all([store.visitors(clients), store.queues(clients, now)]);
    const live = (k: string): Visitor | undefined => {
      const v = visitors.get(k);
      return v && v.expiresAt > now ? v : undefined;
    };
    const emails = new Map<string, Set<string>>();
    const vouchedHere = new Set<string>();
    for (const v of vouches) vouchedHere.add(keyOf(v.shop.id, v.email));
    const claiming = new Map<string, Set<string>>();
    const refs = new Map<string, { shop: StorefrontShop; refs: ProductRef[] }>();
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
    for (const { shop, clientIds } of retryWork.values()) {
      for (const c of clientIds) {
        const v = live(keyOf(shop.id, c));
        if (v) add(emails, shop.id, v.email);
      }
    }
    // the products the waiting events of these clients need, looked up with the batches' own
    for (const ck of held.keys()) {
      const shop = byId.get(ck.split('\u0000')[0]!)!;
      if (!refs.has(shop.id)) refs.set(shop.id, { shop, refs: [] });
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
    const storedRefs = heldRefs(held);
    for (const [shopId, list] of storedRefs) refs.get(shopId)?.refs.push(...list);
    const [found, answers] = await Promise.all([trust.lookup(plan, byId, ask, deadline), describeAll(deps.products, refs, deadline)]);
    if (trust.apiCalls) deps.metrics.pixelAdminCalls.inc({ kind: 'customers' }, trust.apiCalls);

    // pending claims a vouch of this unit applies (webhooks, and lookups that found the customer)
    const vouchKeys = new Map<string, Set<string>>();
    for (const v of vouches) add(vouchKeys, v.shop.id, trust.key(v.shop.id, v.email));
    for (const [shopId, list] of found) for (const email of list) add(vouchKeys, shopId, trust.key(shopId, email));
    const storedClaims = await store.pendingIdentities(vouchKeys, now);
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
    const queues = new ClientQueues(plan, now, deps.anonymousMs, stored, held, deps.random);

    // the unit in arrival order: batches, the emails webhooks name and retries, by receipt id
    const steps: Step[] = [
      ...reads.map(({ r, b }) => ({ kind: 'batch' as const, r, b })),
      ...vouches.map((v) => ({ kind: 'vouch' as const, ...v })),
      ...retries.map((r) => ({ kind: 'retry' as const, r })),
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
    const contextOf = (shop: StorefrontShop) => shopperEvents.contextOf(shop);
    const visitorWrites = new Map<string, { shopId: string; clientId: string } & Visitor>();
    const claims = new PendingIdentities(storedClaims);
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
      if (step.kind === 'retry') {
        outcomes.push(retry(step.r));
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
        queues.forget(ck);
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

      const resolved = b.events.map((e) => resolve(shop.id, e, answers));
      for (const x of resolved) if (x.kind === 'drop') drop(ctx, x.reason);

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

      // the client's earlier events that waited for their products come first, in order
      if (queues.held(ck)) drainClient(ctx, b.clientId, r, outcome);
      const shopper = email === null ? null : shopperEvents.shopperOf(ctx, email);
      let forEmail = 0;
      let forProduct = 0;
      for (const x of resolved) {
        if (x.kind === 'drop') continue;
        const w = x.kind === 'wait' ? ({ described: false, event: x.event } as const) : ({ described: true, event: x.event } as const);
        if (shopper && email && w.described && !queues.held(ck)) {
          count(shopperEvents.apply(ctx, shopper, email, b.clientId, w.event, r, outcome, true));
          continue;
        }
        if (w.event.kind === 'other') {
          count('ignored');
          continue;
        }
        // anonymous: what abandonment needs waits for a vouched email; undescribed: for Shopify's product data
        const waitsFor = queues.push(ck, w, r);
        if (waitsFor === 'email') forEmail += 1;
        else forProduct += 1;
      }
      count('waiting', forEmail);
      count('waiting_for_product', forProduct);
      if (forProduct) waitingForProducts(shop, answers, forProduct);
      const why = claimed ? 'the email is not vouched for by Shopify yet (claim pending)' : 'visitor not identified yet';
      const reasons = [
        forEmail ? `${why}: ${forEmail} event(s) wait for a vouched email` : null,
        forProduct ? `${forProduct} event(s) wait for Shopify to describe their products` : null,
      ].filter((x): x is string => x !== null);
      if (email !== null || forEmail || forProduct) outcome.outcome = 'accepted';
      if (reasons.length) outcome.reason = reasons.join('; ');
      else if (email === null) outcome.reason = claimed ? `${why}: nothing to keep` : 'nothing to keep from an anonymous visitor';
    }

    // what waits is kept; visitors and claims are written
    queues.into(plan);
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

    /** An event dropped for its product: Shopify has no such product or variant, or read_products is not granted. */
    function drop(ctx: ShopCtx, reason: 'unknown' | 'no_scope', n = 1): void {
      if (n === 0) return;
      dropped[reason] += n;
      if (reason === 'unknown') ctx.stats.dropped += n;
      count('dropped', n);
    }

    /** Logs, once per shop and quarter of an hour, that the shop's events wait for product data, and why. */
    function waitingForProducts(shop: StorefrontShop, a: Answers, events: number): void {
      waitLog.log(
        'warn',
        shop.id,
        { shop: shop.domain, lookup: a.outcomes.get(shop.id) ?? 'none', events },
        'storefront events wait for Shopify to describe their products; a later lookup will',
      );
    }

    /** A shop's retry: the clients whose events wait for products and are due, drained with this unit's answers. */
    function retry(r: ParsedReceipt): ReceiptOutcome {
      const outcome: ReceiptOutcome = { id: r.id, outcome: 'ignored', reason: null, messageCount: 0, customerId: null };
      const work = retryWork.get(r.id);
      if (!work) {
        outcome.reason = 'no storefront events of the shop due for a product lookup';
        return outcome;
      }
      const ctx = contextOf(work.shop);
      let described = 0;
      let waiting = 0;
      for (const clientId of work.clientIds) {
        const res = drainClient(ctx, clientId, r, outcome);
        described += res.described;
        if (res.blocked) waiting += 1;
      }
      if (waiting) waitingForProducts(work.shop, answers, waiting);
      outcome.outcome = described || outcome.messageCount ? 'accepted' : 'ignored';
      outcome.reason = `${described} waiting event(s) described; ${waiting} visitor(s) still wait for product data`;
      return outcome;
    }

    /**
     * The client's events held behind one not described yet, in order, with this unit's answers: an
     * identified visitor's count for their email now; an anonymous one's wait for an email.
     */
    function drainClient(ctx: ShopCtx, clientId: string, r: ParsedReceipt, outcome: ReceiptOutcome): DrainResult {
      const ck = keyOf(ctx.shop.id, clientId);
      const visitor = visitorWrites.get(ck) ?? live(ck);
      const shopper = visitor ? shopperEvents.shopperOf(ctx, visitor.email) : null;
      const res = queues.drain(
        ck,
        answers,
        visitor && shopper ? (e) => void shopperEvents.apply(ctx, shopper, visitor.email, clientId, e, r, outcome, false) : null,
      );
      count('described', res.described);
      drop(ctx, 'unknown', res.dropped.unknown);
      drop(ctx, 'no_scope', res.dropped.no_scope);
      return res;
    }

    /** The client claims the email (its earlier claim, if any, is replaced). */
    function claim(shopId: string, clientId: string, email: string): void {
      claims.add({ shopId, clientId, emailKey: trust.key(shopId, email) }, now, new Date(now.getTime() + deps.pendingIdentityMs));
    }

    /** Shopify vouched for `email`: the clients claiming it are identified (`r`: the receipt that vouched; null: a lookup). */
    function applyClaims(ctx: ShopCtx, email: string, r: ParsedReceipt | null): void {
      const waiting = claims.clientsOf(ctx.shop.id, trust.key(ctx.shop.id, email));
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

    /**
     * Ties the client id to a vouched email; its events waiting for an email (stored and of this
     * batch) count for it, then go. Those held behind one waiting for its product go when it does.
     */
    function identify(ctx: ShopCtx, clientId: string, email: string, r: ParsedReceipt, outcome: ReceiptOutcome): void {
      const shopId = ctx.shop.id;
      const ck = keyOf(shopId, clientId);
      const prior = visitorWrites.get(ck) ?? live(ck);
      const replay = queues.takeForEmail(ck);
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
      if (queues.held(ck)) drainClient(ctx, clientId, r, outcome);
    }
  };
}
