// Stage 2 for the forwarded topics: a batch of receipts, in arrival order, becomes a write plan.
// State is read once per batch (ForwardStore), then each receipt is mapped in order against
// that state as the earlier receipts of the batch left it: a customers/update sees the profile
// an earlier one in the batch merged, a checkout sees an order that came before it, an order
// cancels an abandonment that came before it. Nothing is written here; the unit's commit
// (processing/commit.ts) applies the plan and marks the receipts in one transaction.
import { lookupKeys, mapWebhook, type MapOutput, type NewMessage, type StoredFulfillment, type StoredOrder } from '../../mapping';
import { lineItemIds, type ProductLookup } from '../../mapping/items';
import { obj } from '../../mapping/read';
import type { DueEntry } from '../../outbox/due';
import { parseStoredSettings, type Settings } from '../../settings/settings';
import { storedProfile, type CustomerProfile } from '../../mapping/profile';
import { emptyPlan, keyOf, type ExistingMessage, type ForwardStore, type ShopRow, type WritePlan } from './forward-store';
import { CustomerUpdates } from './customer-updates';
import { LoopBudget } from '../loop-budget';
import type { DriverPlan } from '../plan';
import type { ParsedReceipt } from '../unit';
import type { ReceiptOutcome } from '../../intake/receipt-store';
import { toRow } from '../../outbox/store-messages';

/**
 * Looks up the product images and links of a shop's line items (bounded in time; never throws).
 * `scope`: the scopes of the shop's offline session as the caller just read them (null: none),
 * which spares reading the session when no Admin API call is needed.
 */
export type EnrichItems = (shop: { id: string; domain: string; scope?: string | null }, items: LineItemIds) => Promise<ProductLookup>;
type LineItemIds = Array<{ product_id: string | null; variant_id: string | null }>;

/** Topics whose payload lists line items (fulfillment events take theirs from stored state). */
const WITH_LINE_ITEMS = /^(orders|checkouts|fulfillments)\//;

export interface ForwardDeps {
  store: ForwardStore;
  /** Product images and links for line items; events go without them when absent. */
  enrich?: EnrichItems;
  /** Extra mapping input every receipt gets (abandonment policy, product lookups, ...). */
  mapContext?: (shop: ShopRow, r: ParsedReceipt) => Partial<Parameters<typeof mapWebhook>[0]>;
}

/** One message of the batch on its way to the outbox. */
interface Candidate {
  message: NewMessage;
  upsert: boolean;
  receipt: number;
  cancelled: boolean;
  /** For an abandonment not yet stored: whether an order before it in the batch ended it. */
  orderedInBatch: boolean;
}

interface ShopBatch {
  shop: ShopRow;
  settings: Settings;
  status: 'queued' | 'held';
  candidates: Map<string, Candidate>;
  cancelTokens: Set<string>;
  cancelEmails: Set<string>;
  /** Orders of this batch so far, for later checkouts of the batch. */
  orderTokens: Set<string>;
  orderEmails: Set<string>;
}

export function createForwardReceipts(deps: ForwardDeps) {
  const { store } = deps;

  return async function forwardReceipts(items: ParsedReceipt[]): Promise<DriverPlan> {
    const shops = await store.shops([...new Set(items.map((i) => i.shopDomain))]);
    const keyed = items.map((r) => ({ r, keys: lookupKeys(r.topic, r.payload), shop: shops.get(r.shopDomain) }));
    const need = { profiles: new Set<string>(), orders: new Set<string>(), fulfillments: new Set<string>() };
    for (const { keys, shop } of keyed) {
      if (!shop) continue;
      if (keys.customerId) need.profiles.add(keyOf(shop.id, keys.customerId));
      if (keys.orderId) need.orders.add(keyOf(shop.id, keys.orderId));
      if (keys.fulfillmentId) need.fulfillments.add(keyOf(shop.id, keys.fulfillmentId));
    }
    const [profiles, pendingOfCustomers, orders, fulfillments] = await Promise.all([
      store.profiles(need.profiles),
      store.pendingCustomerMessages(need.profiles),
      store.orders(need.orders),
      store.fulfillments(need.fulfillments),
    ]);
    // a refund or a shipment names its customer only through its stored order
    const customerOf = new Map<(typeof keyed)[number], string>();
    const more = new Set<string>();
    for (const item of keyed) {
      if (!item.shop) continue;
      const id = item.keys.customerId ?? (item.keys.orderId ? orders.get(keyOf(item.shop.id, item.keys.orderId))?.customerId : null);
      if (!id) continue;
      const k = keyOf(item.shop.id, id);
      customerOf.set(item, k);
      if (!need.profiles.has(k)) more.add(k);
    }
    if (more.size) {
      const [moreProfiles, morePending] = await Promise.all([store.profiles(more), store.pendingCustomerMessages(more)]);
      for (const [k, p] of moreProfiles) profiles.set(k, p);
      for (const [k, list] of morePending) pendingOfCustomers.set(k, list);
    }
    const storedProfiles = new Map([...profiles].map(([k, p]) => [k, JSON.stringify(p)]));
    const updates = new CustomerUpdates(pendingOfCustomers);
    const missingOrders = new Set([...need.orders].filter((k) => !orders.has(k)));
    const legacyEmails = missingOrders.size ? await store.orderEmailsFromMessages(missingOrders) : new Map<string, string>();
    const products = await lookupProducts(keyed);

    const plan = emptyPlan();
    const outcomes: ReceiptOutcome[] = [];
    const batches = new Map<string, ShopBatch>();
    const changed = { profiles: new Set<string>(), orders: new Set<string>(), fulfillments: new Set<string>() };
    // the mappers are pure and synchronous: the event loop turns between receipts once mapping
    // has taken a while, so a batch of huge orders does not hold it
    const budget = new LoopBudget();

    for (const item of keyed) {
      const { r, keys, shop } = item;
      await budget.step();
      const outcome: ReceiptOutcome = { id: r.id, outcome: 'ignored', reason: null, messageCount: 0, customerId: null };
      outcomes.push(outcome);
      if (!shop || !shop.connection) {
        outcome.reason = 'shop not connected';
        continue;
      }
      if (shop.uninstalledAt) {
        outcome.reason = 'app uninstalled';
        continue;
      }
      let b = batches.get(shop.id);
      if (!b) {
        const status = shop.connection.status === 'connected' ? 'queued' : 'held';
        b = {
          shop,
          settings: parseStoredSettings(shop.settings?.data),
          status,
          candidates: new Map(),
          cancelTokens: new Set(),
          cancelEmails: new Set(),
          orderTokens: new Set(),
          orderEmails: new Set(),
        };
        batches.set(shop.id, b);
      }
      const ck = customerOf.get(item);
      const ok = keys.orderId ? keyOf(shop.id, keys.orderId) : null;
      const fk = keys.fulfillmentId ? keyOf(shop.id, keys.fulfillmentId) : null;
      const order = ok ? (orders.get(ok) ?? null) : undefined;
      const out: MapOutput = mapWebhook({
        topic: r.topic,
        payload: r.payload,
        webhookId: r.webhookId,
        shopDomain: r.shopDomain,
        receivedAt: r.receivedAt,
        triggeredAt: r.triggeredAt ?? null,
        settings: b.settings,
        profile: ck ? (profiles.get(ck) ?? null) : undefined,
        orderEmail: ok ? (order?.email ?? legacyEmails.get(ok) ?? null) : null,
        order,
        fulfillment: fk ? (fulfillments.get(fk) ?? null) : undefined,
        products: products.get(shop.id),
        ...deps.mapContext?.(shop, r),
      });
      outcome.customerId = out.customerId;
      remember(out, shop.id);
      if (out.cancelAbandoned) cancel(b, out.cancelAbandoned);
      let count = 0;
      for (const m of out.messages) count += m.coalesce ? deferred(b, m, r.id) : propose(b, m, false, r.id, updates);
      for (const m of out.upserts) count += propose(b, m, true, r.id, updates);
      outcome.outcome = out.ignored ? 'ignored' : 'accepted';
      outcome.reason = out.ignored ?? null;
      outcome.messageCount = count;
    }

    const due: DueEntry[] = [];
    const known = await settleReads([...batches.values()], store);
    for (const b of batches.values()) settle(b, known, plan, due);
    const changedProfiles: Array<{ shopId: string; profile: CustomerProfile; settings: Settings }> = [];
    for (const k of changed.profiles) {
      const profile = profiles.get(k)!;
      if (storedProfiles.get(k) === JSON.stringify(profile)) continue;
      const shopId = k.split('\u0000')[0]!;
      plan.profiles.push(storedProfile(shopId, profile));
      changedProfiles.push({ shopId, profile, settings: batches.get(shopId)?.settings ?? parseStoredSettings(null) });
    }
    updates.settle(plan, changedProfiles);
    for (const k of changed.orders) plan.orders.push({ shopId: k.split('\u0000')[0]!, order: orders.get(k)! });
    for (const k of changed.fulfillments) plan.fulfillments.push({ shopId: k.split('\u0000')[0]!, state: fulfillments.get(k)! });
    return { outcomes, due, write: (tx, now) => store.write(tx, plan, now) };

    /** One lookup per shop for all the line items of the batch, the shops side by side. */
    async function lookupProducts(all: typeof keyed): Promise<Map<string, ProductLookup>> {
      const byShop = new Map<string, { shop: ShopRow; items: LineItemIds }>();
      if (!deps.enrich) return new Map();
      for (const { r, shop } of all) {
        if (!shop?.connection || shop.uninstalledAt || !WITH_LINE_ITEMS.test(r.topic)) continue;
        const entry = byShop.get(shop.id) ?? { shop, items: [] };
        entry.items.push(...lineItemIds(obj(r.payload)?.line_items));
        byShop.set(shop.id, entry);
      }
      const found = await Promise.all(
        [...byShop.values()].filter((e) => e.items.length).map(async (e) => [e.shop.id, await deps.enrich!(e.shop, e.items)] as const),
      );
      return new Map(found);
    }

    /** A deferred customer_updated: a new candidate, or a refresh of the one the customer has waiting. */
    function deferred(b: ShopBatch, m: NewMessage, receipt: number): number {
      if (!updates.coalesce(b.shop.id, m)) return 0;
      const cand: Candidate = { message: m, upsert: false, receipt, cancelled: false, orderedInBatch: false };
      b.candidates.set(m.sourceId, cand);
      updates.proposed(b.shop.id, m, () => {
        cand.cancelled = true;
      });
      return 1;
    }

    /** What the mapper asks to store becomes the state later receipts of the batch see. */
    function remember(out: MapOutput, shopId: string): void {
      if (out.profile) {
        const k = keyOf(shopId, out.profile.customerId);
        profiles.set(k, out.profile);
        changed.profiles.add(k);
      }
      if (out.orderSummary) {
        const k = keyOf(shopId, out.orderSummary.orderId);
        orders.set(k, out.orderSummary as StoredOrder);
        changed.orders.add(k);
      }
      if (out.purchase) plan.purchases.push({ shopId, ...out.purchase });
      if (out.fulfillmentState) {
        const k = keyOf(shopId, out.fulfillmentState.fulfillmentId);
        fulfillments.set(k, out.fulfillmentState as StoredFulfillment);
        changed.fulfillments.add(k);
      }
    }
  };
}

/** An order: pending abandonments of its checkout token or email end (stored ones and this batch's so far). */
function cancel(b: ShopBatch, c: { checkoutToken: string | null; email: string | null }): void {
  if (c.checkoutToken) {
    b.cancelTokens.add(c.checkoutToken);
    b.orderTokens.add(c.checkoutToken);
  }
  if (c.email) {
    b.cancelEmails.add(c.email);
    b.orderEmails.add(c.email);
  }
  for (const cand of b.candidates.values()) {
    if (!cand.upsert) continue;
    const m = cand.message;
    if ((c.checkoutToken && m.checkoutToken === c.checkoutToken) || (c.email && m.email === c.email)) cand.cancelled = true;
  }
}

/** Adds a message of the batch; returns 1 when it may be sent (a new event, or newer activity). */
function propose(b: ShopBatch, m: NewMessage, upsert: boolean, receipt: number, updates: CustomerUpdates): number {
  const cur = b.candidates.get(m.sourceId);
  updates.sent(b.shop.id, m);
  if (!upsert) {
    if (cur) return 0; // the same event twice in one batch: the first one stands
    b.candidates.set(m.sourceId, { message: m, upsert, receipt, cancelled: false, orderedInBatch: false });
    return m.skip ? 0 : 1;
  }
  const ordered = (m.checkoutToken !== null && b.orderTokens.has(m.checkoutToken)) || (m.email !== null && b.orderEmails.has(m.email));
  if (!cur) {
    b.candidates.set(m.sourceId, { message: m, upsert, receipt, cancelled: false, orderedInBatch: ordered });
    return m.skip || ordered ? 0 : 1;
  }
  // only newer activity moves the abandonment: a late checkouts/create must not pull it back
  if (m.runAt.getTime() >= cur.message.runAt.getTime()) cur.message = m;
  cur.orderedInBatch ||= ordered;
  return 0;
}

/** Candidates that may be new abandonments: not cancelled, not ended by an order of this batch. */
function openAbandonments(b: ShopBatch): Candidate[] {
  return [...b.candidates.values()].filter((c) => c.upsert && !c.cancelled && !c.orderedInBatch && !c.message.skip);
}

interface Known {
  /** Messages already stored under the batch's source ids (keys: shop id and source id). */
  existing: Map<string, ExistingMessage>;
  /** Orders stored before this batch: checkout tokens, and the latest order time per email. */
  stored: { tokens: Set<string>; emailLatest: Map<string, Date> };
}

/** What settle() decides against, read for every shop of the batch at once (three queries at most). */
async function settleReads(batches: ShopBatch[], store: ForwardStore): Promise<Known> {
  const ids = new Set<string>();
  for (const b of batches) for (const sourceId of b.candidates.keys()) ids.add(keyOf(b.shop.id, sourceId));
  const existing = await store.existing(ids);
  // new abandonments whose checkout may already have ended in an order stored before this batch
  const tokens = new Set<string>();
  const emails = new Set<string>();
  for (const b of batches) {
    for (const c of openAbandonments(b)) {
      if (existing.has(keyOf(b.shop.id, c.message.sourceId))) continue;
      if (c.message.checkoutToken !== null) tokens.add(keyOf(b.shop.id, c.message.checkoutToken));
      if (c.message.email !== null) emails.add(keyOf(b.shop.id, c.message.email));
    }
  }
  const stored =
    tokens.size || emails.size
      ? await store.ordersFor(tokens, emails)
      : { tokens: new Set<string>(), emailLatest: new Map<string, Date>() };
  return { existing, stored };
}

/** Decides, against what the shop already has, what each candidate becomes; fills the plan. */
function settle(b: ShopBatch, known: Known, plan: WritePlan, due: DueEntry[]): void {
  const shopId = b.shop.id;
  if (b.cancelTokens.size || b.cancelEmails.size) plan.cancels.push({ shopId, tokens: [...b.cancelTokens], emails: [...b.cancelEmails] });
  const opts = { shopId, status: b.status, heldReason: b.status === 'held' ? 'invalid_key' : null };

  for (const c of b.candidates.values()) {
    const m = c.message;
    // a deferred customer_updated that a later event of the batch carried: never stored
    if (m.coalesce && c.cancelled) continue;
    const row = toRow(m, opts);
    const prior = known.existing.get(keyOf(shopId, m.sourceId));
    if (prior) {
      if (prior.status === 'skipped' && !m.skip) {
        plan.replacements.push({ id: prior.id, row });
        if (row.status === 'queued') due.push({ shopId, runAt: m.runAt });
      } else if (c.upsert && !c.cancelled && !m.skip && (prior.status === 'queued' || prior.status === 'held') && m.runAt >= prior.dueAt) {
        plan.abandonmentUpdates.push({ id: prior.id, runAt: m.runAt, body: row.body, email: m.email });
        due.push({ shopId, runAt: m.runAt });
      }
      continue;
    }
    if (c.upsert && row.status !== 'skipped') {
      const checkoutAt = new Date(m.runAt.getTime() - b.settings.abandonment_delay_minutes * 60_000);
      const latest = m.email ? known.stored.emailLatest.get(keyOf(shopId, m.email)) : undefined;
      const ordered =
        c.cancelled ||
        c.orderedInBatch ||
        (m.checkoutToken !== null && known.stored.tokens.has(keyOf(shopId, m.checkoutToken))) ||
        (latest !== undefined && latest >= checkoutAt);
      if (ordered) {
        plan.inserts.push({ ...row, status: 'cancelled', heldReason: null, lastError: 'the customer placed an order' });
        continue;
      }
    }
    plan.inserts.push(row);
    if (row.status === 'queued') due.push({ shopId, runAt: m.runAt });
  }
}
