// Stage 2 for storefront batches (receipts of kind 'pixel'), and for the emails the unit's signed
// webhooks vouch for. State is read once per unit (unit-state.ts), each receipt is decided in
// memory in arrival order against that state as the earlier receipts left it, and nothing is
// written until the unit's commit applies the plan in its transaction. Per unit:
// - products: the pixel names products by id; every title, price and URL sent is Shopify's
//   (resolve.ts). A product or variant the shop does not have is dropped and counted. One Shopify
//   has not described yet (slow, throttled, failing, over budget) waits in its client's queue
//   (queues.ts), at most WAITING_EVENT_MS, and the visitor's later events wait behind it; a
//   later unit describes it (a retry receipt of its shop, retries.ts, or the client's next batch)
//   and it goes the way it would have gone at once. The unit's deadline decides only when.
// - identity (identities.ts): an email a batch gives is a pending identity (trust.ts) until Shopify
//   vouches for it; a vouched email ties the batch's client id to it, and later batches of the
//   client id count for it. A pending identity waits at most PENDING_IDENTITY_MS, and so do the
//   visitor's events (PixelEvent, at most WAITING_EVENT_MS): a webhook of a later receipt that
//   names the email identifies the visitor then, stitching those events; the sweeper deletes
//   whatever is never vouched for, unsent.
// - events (shopper-events.ts): viewed_product, added_to_cart, and the browse and cart
//   abandonments, within each email's daily limits (the shop's settings
//   storefront_events_per_email_day and storefront_abandonments_per_email_day).
// - consent: a batch whose visitor does not allow marketing sends nothing and keeps nothing.
import type { Settings } from '../../settings/settings';
import type { ReceiptOutcome } from '../../intake/receipt-store';
import type { CustomerLookup } from '../../integrations/shopify/customer-lookup';
import type { ProductCatalog } from '../../integrations/shopify/products';
import { LogOnce } from '../../observability/log-once';
import type { Logger } from '../../observability/logger';
import type { Metrics } from '../../observability/metrics';
import type { DueEntry } from '../../outbox/due';
import type { DriverPlan, StorefrontStage } from '../plan';
import type { ParsedReceipt } from '../unit';
import type { EmailKeys } from './email-keys';
import { Identities } from './identities';
import { PendingIdentities } from './pending-identities';
import { ClientQueues } from './queues';
import { resolve, type Answers } from './resolve';
import { gate, refusal, shopDomains, unitInputs, type BatchRead, type GatedUnit, type Vouch } from './shop-gate';
import { ShopperEvents, type ShopCtx } from './shopper-events';
import { emptyStorefrontPlan, keyOf, type StorefrontShop, type StorefrontStore } from './store';
import { BatchTrust } from './trust';
import { UnitCounts } from './unit-counts';
import { LOOKUP_DEADLINE_MS, loadUnitState, type UnitState } from './unit-state';

const HOUR_MS = 3_600_000;

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
  /** How long a pending identity waits for Shopify to vouch for its email (PENDING_IDENTITY_MS). */
  pendingIdentityMs: number;
  /** A shop's settings until its merchant changes them (abandonment delays, per-email limits). */
  settingsDefaults: Settings;
  /** The jitter of the waiting events' backoff (Math.random; tests pin it). */
  random?: () => number;
}

/** A step of the unit, in arrival order: a storefront batch, an email a signed webhook named, or a shop's retry. */
type Step = ({ kind: 'batch' } & BatchRead) | ({ kind: 'vouch' } & Vouch) | { kind: 'retry'; r: ParsedReceipt };

/** What a unit's steps are decided with. */
interface UnitRun {
  unit: GatedUnit;
  state: UnitState;
  identities: Identities;
  events: ShopperEvents;
  trust: BatchTrust;
  counts: UnitCounts;
  /** Logs, once per shop and quarter of an hour, that the shop's events wait for product data, and why. */
  waitingForProducts(shop: StorefrontShop, answers: Answers, events: number): void;
}

const NOTHING: DriverPlan = { outcomes: [], due: [], write: async () => undefined };

export function createStorefrontStage(deps: StorefrontStageDeps): StorefrontStage {
  const { store } = deps;
  // why a shop's events wait for their products: once per shop and quarter of an hour
  const waitLog = new LogOnce(deps.logger, 15 * 60_000, () => deps.now().getTime());
  const waitingForProducts = (shop: StorefrontShop, a: Answers, events: number) =>
    waitLog.log(
      'warn',
      shop.id,
      { shop: shop.domain, lookup: a.outcomes.get(shop.id) ?? 'none', events },
      'storefront events wait for Shopify to describe their products; a later lookup will',
    );

  return async function storefrontStage(items: ParsedReceipt[], signed: ParsedReceipt[] = []): Promise<DriverPlan> {
    // the gate: the unit's batches, vouches and retries, of the shops that take storefront events
    const inputs = unitInputs(items, signed);
    if (items.length === 0 && inputs.named.length === 0) return NOTHING;
    const now = deps.now();
    const deadline = Date.now() + LOOKUP_DEADLINE_MS;
    const unit = gate(inputs, await store.shops(shopDomains(inputs)));
    if (unit.reads.length === 0 && unit.vouches.length === 0 && unit.retries.length === 0) return NOTHING;

    // the state, read once, and Shopify's answers within the deadline
    const plan = emptyStorefrontPlan();
    const counts = new UnitCounts();
    const trust = new BatchTrust({ keys: deps.keys, customers: deps.customers, vouchMs: deps.identityMs }, store, now);
    const state = await loadUnitState(deps, unit, trust, plan, now, deadline);
    const events = new ShopperEvents({
      store,
      plan,
      trust,
      pending: state.abandonments,
      settingsDefaults: deps.settingsDefaults,
      count: (what, n) => counts.count(what, n),
    });
    const identities = new Identities(
      { plan, now, identityMs: deps.identityMs, pendingIdentityMs: deps.pendingIdentityMs, trust, events, counts, answers: state.answers },
      state.visitors,
      new PendingIdentities(state.pendingIdentities),
      new ClientQueues(plan, now, deps.anonymousMs, state.waiting, state.held, deps.random),
    );
    const run: UnitRun = { unit, state, identities, events, trust, counts, waitingForProducts };

    // lookups answered before any receipt of the unit: the visitors waiting on those emails first
    for (const [shopId, emails] of state.found) {
      const ctx = events.contextOf(unit.byId.get(shopId)!);
      for (const email of emails) identities.identifyPending(ctx, email, null);
    }
    // then the unit's steps, in arrival order
    const outcomes: ReceiptOutcome[] = [];
    for (const step of inArrivalOrder(unit)) {
      if (step.kind === 'batch') outcomes.push(batch(run, step));
      else if (step.kind === 'retry') outcomes.push(retry(run, step.r));
      else {
        trust.vouch(plan, step.shop.id, step.email, step.source);
        identities.identifyPending(events.contextOf(step.shop), step.email, step.r);
      }
    }

    // the plan: what waits, visitors and pending identities, messages, trust rows, the shops' hourly counts
    identities.into(plan);
    const due: DueEntry[] = [];
    for (const ctx of events.shops()) await events.settle(ctx, due);
    trust.flush(plan);
    const hour = Math.floor(now.getTime() / HOUR_MS);
    for (const ctx of events.shops()) plan.stats.push({ shopId: ctx.shop.id, hour, ...ctx.stats });
    return {
      outcomes,
      due,
      async write(tx, at) {
        await store.write(tx, plan, at);
        counts.record(deps.metrics);
      },
    };
  };
}

/** Batches, the emails webhooks name and retries, by receipt id. */
function inArrivalOrder(unit: GatedUnit): Step[] {
  const steps: Step[] = [
    ...unit.reads.map((read) => ({ kind: 'batch' as const, ...read })),
    ...unit.vouches.map((v) => ({ kind: 'vouch' as const, ...v })),
    ...unit.retries.map((r) => ({ kind: 'retry' as const, r })),
  ];
  return steps.sort((a, b) => a.r.id - b.r.id);
}

/** A storefront batch, decided against the unit's state as the receipts before it left it. */
function batch(run: UnitRun, { r, b }: BatchRead): ReceiptOutcome {
  const { identities, events, trust, counts } = run;
  const outcome: ReceiptOutcome = { id: r.id, outcome: 'ignored', reason: null, messageCount: 0, customerId: null };
  if (!b.ok) {
    Object.assign(outcome, { outcome: 'rejected', reason: b.reason });
    counts.count('invalid', b.events);
    return outcome;
  }
  counts.count('invalid', b.invalid);
  const shop = run.unit.shops.get(r.shopDomain);
  const refused = refusal(shop, b);
  if (refused !== null || !shop) {
    outcome.reason = refused;
    counts.count('ignored', b.events.length);
    return outcome;
  }
  const ctx = events.contextOf(shop);
  if (!b.marketing) {
    identities.forget(ctx, b.clientId);
    outcome.reason = 'the visitor does not allow marketing: nothing kept';
    counts.count('no_consent', b.events.length);
    return outcome;
  }

  const ck = keyOf(shop.id, b.clientId);
  const visitor = identities.visitorOf(ck);
  const resolved = b.events.map((e) => resolve(shop.id, e, run.state.answers));
  for (const x of resolved) if (x.kind === 'drop') counts.drop(ctx, x.reason);

  // who the visitor is now: the email the batch gives, once vouched for; else the one it had
  let email: string | null = visitor?.email ?? null;
  let pending = false;
  if (b.email && visitor?.email !== b.email) {
    if (trust.isVouched(shop.id, b.email)) {
      identities.identify(ctx, b.clientId, b.email, r, outcome);
      email = b.email;
    } else {
      // the visitor stays anonymous until Shopify names the email
      identities.addPending(ctx, b.clientId, b.email);
      email = null;
      pending = true;
    }
  } else if (visitor) identities.seen(shop.id, b.clientId, visitor);

  // the client's earlier events that waited for their products come first, in order
  if (identities.held(ck)) identities.drain(ctx, b.clientId, r, outcome);
  const shopper = email === null ? null : events.shopperOf(ctx, email);
  let forEmail = 0;
  let forProduct = 0;
  for (const x of resolved) {
    if (x.kind === 'drop') continue;
    const w = x.kind === 'wait' ? ({ described: false, event: x.event } as const) : ({ described: true, event: x.event } as const);
    if (shopper && email && w.described && !identities.held(ck)) {
      counts.count(events.apply(ctx, shopper, email, b.clientId, w.event, r, outcome, true));
      continue;
    }
    if (w.event.kind === 'other') {
      counts.count('ignored');
      continue;
    }
    // anonymous: what abandonment needs waits for a vouched email; undescribed: for Shopify's product data
    if (identities.wait(ck, w, r) === 'email') forEmail += 1;
    else forProduct += 1;
  }
  counts.count('waiting', forEmail);
  counts.count('waiting_for_product', forProduct);
  if (forProduct) run.waitingForProducts(shop, run.state.answers, forProduct);
  const why = pending ? 'the email is not vouched for by Shopify yet (identity pending)' : 'visitor not identified yet';
  const reasons = [
    forEmail ? `${why}: ${forEmail} event(s) wait for a vouched email` : null,
    forProduct ? `${forProduct} event(s) wait for Shopify to describe their products` : null,
  ].filter((x): x is string => x !== null);
  if (email !== null || forEmail || forProduct) outcome.outcome = 'accepted';
  if (reasons.length) outcome.reason = reasons.join('; ');
  else if (email === null) outcome.reason = pending ? `${why}: nothing to keep` : 'nothing to keep from an anonymous visitor';
  return outcome;
}

/** A shop's retry: the clients whose events wait for products and are due, drained with this unit's answers. */
function retry(run: UnitRun, r: ParsedReceipt): ReceiptOutcome {
  const outcome: ReceiptOutcome = { id: r.id, outcome: 'ignored', reason: null, messageCount: 0, customerId: null };
  const work = run.state.retries.get(r.id);
  if (!work) {
    outcome.reason = 'no storefront events of the shop due for a product lookup';
    return outcome;
  }
  const ctx: ShopCtx = run.events.contextOf(work.shop);
  let described = 0;
  let waiting = 0;
  for (const clientId of work.clientIds) {
    const res = run.identities.drain(ctx, clientId, r, outcome);
    described += res.described;
    if (res.blocked) waiting += 1;
  }
  if (waiting) run.waitingForProducts(work.shop, run.state.answers, waiting);
  outcome.outcome = described || outcome.messageCount ? 'accepted' : 'ignored';
  outcome.reason = `${described} waiting event(s) described; ${waiting} visitor(s) still wait for product data`;
  return outcome;
}
