// What a storefront unit decides against, read before any of its receipts is decided (store.ts,
// one statement per kind of state), and Shopify's answers within the unit's deadline:
// - the visitors of the batches' client ids and of the clients a retry drains, with their queues
//   of events waiting for Shopify's product data, and the trust rows of every email involved;
// - the Admin API, side by side, for what the caches cannot answer: the customers behind pending
//   identities no webhook of the unit vouches for, and the products the batches and the waiting
//   events name. Whatever is unanswered by LOOKUP_DEADLINE_MS waits for a later unit: the identity
//   stays pending, the event waits for its product;
// - the pending identities the unit's vouches confirm (its webhooks, and the lookups that found
//   the customer), their clients' visitors and events waiting for an email, and the pending
//   abandonments of every email the unit may send to, or cancel for (a visitor withdrawing consent).
import type { ProductCatalog, ProductRef } from '../../integrations/shopify/products';
import type { Metrics } from '../../observability/metrics';
import { heldRefs } from './queues';
import { describeAll, type Answers } from './resolve';
import type { GatedUnit } from './shop-gate';
import { takesEvents } from './shop-gate';
import {
  keyOf,
  type PendingAbandonment,
  type PendingIdentity,
  type QueuedRow,
  type StorefrontPlan,
  type StorefrontShop,
  type StorefrontStore,
  type Visitor,
  type WaitingRow,
} from './store';
import type { BatchTrust } from './trust';

/**
 * How long a unit waits for the Admin API (products, customers). It decides only when an event is
 * sent, never whether: a product not described by then waits for a later unit, and an identity
 * whose customer is not found by then stays pending.
 */
export const LOOKUP_DEADLINE_MS = 2_000;
/** Clients whose events wait for their products, drained per retry receipt of a shop (the rest at the next). */
export const RETRY_CLIENTS = 200;

export interface UnitState {
  /** Identified visitors of the unit's client ids, by keyOf(shopId, clientId), as stored. */
  visitors: Map<string, Visitor>;
  /** Events waiting for their product's data, and those behind them, by client. */
  held: Map<string, QueuedRow[]>;
  /** Events waiting for an email, of the clients the unit may identify, by client. */
  waiting: Map<string, WaitingRow[]>;
  /** The stored pending identities the unit's vouches confirm. */
  pendingIdentities: PendingIdentity[];
  /** Pending storefront abandonments of the unit's emails, by keyOf(shopId, email). */
  abandonments: Map<string, PendingAbandonment[]>;
  /** The clients each retry receipt drains (none for a shop that takes no storefront events now). */
  retries: Map<number, { shop: StorefrontShop; clientIds: string[] }>;
  /** Shopify's products, as the unit knows them. */
  answers: Answers;
  /** Emails a lookup found a customer for, by shop id: vouched by this unit. */
  found: Map<string, string[]>;
}

export interface UnitStateDeps {
  store: StorefrontStore;
  products: Pick<ProductCatalog, 'describe'>;
  metrics: Metrics;
}

type ByShop<T> = Map<string, Set<T>>;
const add = <T>(m: ByShop<T>, shopId: string, v: T) => m.set(shopId, (m.get(shopId) ?? new Set()).add(v));

/** Reads the unit's state and asks Shopify what it lacks, until `deadline` (Date.now epoch ms). */
export async function loadUnitState(
  deps: UnitStateDeps,
  unit: GatedUnit,
  trust: BatchTrust,
  plan: StorefrontPlan,
  now: Date,
  deadline: number,
): Promise<UnitState> {
  const { store } = deps;
  // the visitors of the batches' clients and of the clients a retry drains, and their events
  // waiting for products
  const clients: ByShop<string> = new Map();
  for (const { b, shop } of unit.taken) add(clients, shop.id, b.clientId);
  const retries = new Map<number, { shop: StorefrontShop; clientIds: string[] }>();
  const retryShops = new Set<string>();
  for (const r of unit.retries) {
    const shop = unit.shops.get(r.shopDomain);
    if (!takesEvents(shop) || retryShops.has(shop.id)) continue;
    retryShops.add(shop.id);
    const clientIds = await store.dueClients(shop.id, now, RETRY_CLIENTS);
    retries.set(r.id, { shop, clientIds });
    for (const c of clientIds) add(clients, shop.id, c);
  }
  const [visitors, held] = await Promise.all([store.visitors(clients), store.queues(clients, now)]);
  const live = (ck: string): Visitor | undefined => {
    const v = visitors.get(ck);
    return v && v.expiresAt > now ? v : undefined;
  };

  // the emails the unit may send to, the clients giving a new one, and the products named
  const emails: ByShop<string> = new Map();
  const giving: ByShop<string> = new Map();
  const refs = new Map<string, { shop: StorefrontShop; refs: ProductRef[] }>();
  for (const { b, shop } of unit.taken) {
    const v = live(keyOf(shop.id, b.clientId));
    // a visitor withdrawing consent too: its shopper's pending abandonments are cancelled
    if (v) add(emails, shop.id, v.email);
    if (!b.marketing) continue;
    if (b.email) {
      add(emails, shop.id, b.email);
      if (v?.email !== b.email) add(giving, shop.id, b.clientId);
    }
    const entry = refs.get(shop.id) ?? { shop, refs: [] };
    for (const e of b.events) if (e.kind === 'view' || e.kind === 'add') entry.refs.push(e.ref);
    refs.set(shop.id, entry);
  }
  for (const { shop, clientIds } of retries.values()) {
    for (const c of clientIds) {
      const v = live(keyOf(shop.id, c));
      if (v) add(emails, shop.id, v.email);
    }
  }
  // the products the waiting events of these clients need, looked up with the batches' own
  for (const ck of held.keys()) {
    const shop = unit.byId.get(ck.split('\u0000')[0]!)!;
    if (!refs.has(shop.id)) refs.set(shop.id, { shop, refs: [] });
  }
  await trust.load(emails);

  // the Admin API, for what the caches cannot answer: customers behind the emails given that no
  // webhook of this unit names, and products; side by side, within the deadline
  const vouchedHere = new Set(unit.vouches.map((v) => keyOf(v.shop.id, v.email)));
  const ask: ByShop<string> = new Map();
  for (const { b, shop } of unit.taken) {
    if (!b.marketing || !b.email) continue;
    if (live(keyOf(shop.id, b.clientId))?.email === b.email) continue;
    if (trust.isVouched(shop.id, b.email) || trust.isKnownUnknown(shop.id, b.email) || vouchedHere.has(keyOf(shop.id, b.email))) continue;
    add(ask, shop.id, b.email);
  }
  for (const [shopId, list] of heldRefs(held)) refs.get(shopId)?.refs.push(...list);
  const [found, answers] = await Promise.all([trust.lookup(plan, unit.byId, ask, deadline), describeAll(deps.products, refs, deadline)]);
  if (trust.apiCalls) deps.metrics.pixelAdminCalls.inc({ kind: 'customers' }, trust.apiCalls);

  // the pending identities a vouch of this unit confirms (webhooks, and lookups that found the customer)
  const vouchKeys: ByShop<string> = new Map();
  for (const v of unit.vouches) add(vouchKeys, v.shop.id, trust.key(v.shop.id, v.email));
  for (const [shopId, list] of found) for (const email of list) add(vouchKeys, shopId, trust.key(shopId, email));
  const pendingIdentities = await store.pendingIdentities(vouchKeys, now);
  const unread: ByShop<string> = new Map();
  for (const p of pendingIdentities) {
    add(giving, p.shopId, p.clientId);
    if (!clients.get(p.shopId)?.has(p.clientId)) add(unread, p.shopId, p.clientId);
  }
  if (unread.size) for (const [k, v] of await store.visitors(unread)) visitors.set(k, v);
  if (pendingIdentities.length) {
    // the emails a webhook of the unit vouches for that pending identities wait on: their rows and abandonments too
    const awaited = new Set(pendingIdentities.map((p) => keyOf(p.shopId, p.emailKey)));
    for (const v of unit.vouches) if (awaited.has(keyOf(v.shop.id, trust.key(v.shop.id, v.email)))) add(emails, v.shop.id, v.email);
    await trust.load(emails);
  }
  const [waiting, abandonments] = await Promise.all([store.waiting(giving, now), store.pending(emails)]);
  return { visitors, held, waiting, pendingIdentities, abandonments, retries, answers, found };
}
