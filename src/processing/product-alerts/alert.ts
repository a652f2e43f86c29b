// One product-alert signal to its end: the shop's settings, then Shopify's word on the variant as
// it is now (a webhook is a signal, delivered in any order: a variant sold out again, or whose
// price went back up, is nobody's news), then its messages queued a chunk of recipients per
// transaction (recipients.ts), each chunk renewing the runner's claim on the signal, with a pause
// as long after each.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db, DbProvider } from '../../db/client';
import type { ProductCatalog } from '../../integrations/shopify/products';
import type { VariantLookup } from '../../integrations/shopify/variant-lookup';
import { alertMessage, type AlertProduct } from '../../mapping/product-alerts';
import { lowerDue } from '../../outbox/due';
import { insertNew } from '../../outbox/store-messages';
import { parseStoredSettings } from '../../settings/settings';
import { dropChunk, restockChunk, type Chunk } from './recipients';
import type { Signal, SignalStore } from './signals';

/**
 * Recipients per transaction: about 25 ms of writing each on SQLite, whose one connection intake,
 * stage 2 and delivery share, so an order confirmation waits behind one chunk at most.
 */
export const ALERT_CHUNK = 100;
/** How long a signal waits for Shopify's answer before it is given back for later. */
const LOOKUP_DEADLINE_MS = 10_000;

/** Another runner holds the signal now (this one's claim ran out): it wrote nothing more. */
export class ClaimLost extends Error {}

/** How a signal's turn ends: done or dropped for good, later after a growing wait, or resumed at once (the process stopped). */
export type Outcome = { state: 'done' | 'dropped' | 'later' | 'resume'; note: string };

export interface AlertDeps {
  db: Db;
  provider: DbProvider;
  now: () => Date;
  signals: Pick<SignalStore, 'progress'>;
  products: Pick<ProductCatalog, 'describe'>;
  variants: VariantLookup;
  /** After a chunk committed: its messages are due now. */
  onQueued: (shopId: string) => void;
}

/**
 * One signal to its end: its messages queued, or why not, or 'later'. Throws ClaimLost when
 * another runner took the signal over; `stopping`: the process stops, the rest goes next.
 */
export async function alertSignal(deps: AlertDeps, s: Signal, owner: string, stopping: () => boolean): Promise<Outcome> {
  const { db } = deps;
  const shop = await db.shop.findUnique({ where: { id: s.shopId }, include: { connection: true, settings: true } });
  if (!shop?.connection || shop.uninstalledAt) return { state: 'dropped', note: 'the shop is not connected' };
  const settings = parseStoredSettings(shop.settings?.data);
  const restock = s.kind === 'restock';
  if (!settings.events[restock ? 'back_in_stock' : 'price_dropped'])
    return { state: 'done', note: `${restock ? 'back_in_stock' : 'price_dropped'} is turned off` };
  const deadline = Date.now() + LOOKUP_DEADLINE_MS;
  const ref = { id: shop.id, domain: shop.domain };
  const v = await deps.variants.find(ref, s.variantId, deadline, { fresh: true });
  if (v.kind === 'unknown') return { state: 'dropped', note: 'Shopify has no such variant' };
  if (v.kind === 'unavailable') return { state: 'later', note: `the variant could not be read: ${v.reason}` };
  if (restock && !v.variant.availableForSale) return { state: 'done', note: 'sold out again before it could be announced' };
  if (!restock && v.variant.price !== null && s.price !== null && Math.round(v.variant.price * 100) > Math.round(s.price * 100))
    return { state: 'done', note: 'the price went back up before the drop could be announced' };
  const described = (await deps.products.describe(ref, [{ product_id: s.productId, variant_id: s.variantId }], deadline)).items[0];
  if (described === 'unknown') return { state: 'dropped', note: 'Shopify has no such product' };
  if (described === undefined || described === 'unavailable') return { state: 'later', note: 'the product could not be described' };
  const product: AlertProduct = {
    product_id: described.product_id,
    variant_id: described.variant_id,
    product_title: described.product_title,
    variant_title: described.variant_title,
    product_url: described.product_url,
    image_url: described.image_url,
    // the price as Shopify says it is now
    price: v.variant.price ?? (restock ? described.price : (s.price ?? described.price)),
    currency: described.currency,
  };
  const status = shop.connection.status === 'connected' ? 'queued' : 'held';
  let queued = s.queued;
  for (;;) {
    const at = deps.now();
    const started = Date.now();
    const n = await db.$transaction(
      async (tx) => {
        const chunk: Chunk = restock
          ? await restockChunk(tx, deps.provider, s.shopId, s.variantId, at, ALERT_CHUNK)
          : await dropChunk(tx, deps.provider, s.shopId, s.variantId, at, ALERT_CHUNK);
        if (chunk.read === 0) return -1;
        const input = {
          shopDomain: shop.domain,
          settings,
          sourceId: s.sourceId,
          topic: restock ? ('variants/in_stock' as const) : ('products/update' as const),
          occurredAt: s.createdAt,
          now: at,
          product,
          ...(s.previousPrice !== null ? { previousPrice: s.previousPrice } : {}),
        };
        const messages = chunk.send.map((r) => alertMessage(input, r)).filter((m) => m !== null);
        const inserted = await insertNew(tx, deps.provider, messages, {
          shopId: s.shopId,
          status,
          heldReason: status === 'held' ? 'invalid_key' : null,
        });
        if (!(await deps.signals.progress(tx, s, owner, inserted, at))) throw new ClaimLost();
        if (inserted && status === 'queued') await lowerDue(tx, deps.provider, [{ shopId: s.shopId, runAt: at }]);
        return inserted;
      },
      { maxWait: 10_000, timeout: 30_000 },
    );
    if (n < 0) break;
    queued += n;
    if (n > 0) deps.onQueued(s.shopId);
    // at most half of the database's time: after each chunk, a pause as long as it took, so the
    // webhooks, stage 2 and sends waiting for the connection go first (sending takes far longer
    // than queueing anyway: 10,000 messages are 1,000 s at 10 a second)
    await sleep(Math.min(1_000, Date.now() - started));
    if (stopping()) return { state: 'resume', note: 'the process stopped mid-way; the rest goes next' };
  }
  return { state: 'done', note: `${queued} message(s) queued` };
}
