// One product-alert signal to its end: the shop's settings, then Shopify's word on the product
// (a restock read from the Admin API as it is now: a variant sold out again by then is nobody's
// news; a drop from the catalog the update just refreshed), then its messages queued a chunk of
// recipients per transaction (recipients.ts), each chunk renewing the runner's claim on the signal.
import type { Db, DbProvider } from '../../db/client';
import type { ProductCatalog } from '../../integrations/shopify/products';
import type { VariantLookup } from '../../integrations/shopify/variant-lookup';
import { alertMessage, type AlertProduct } from '../../mapping/product-alerts';
import { lowerDue } from '../../outbox/due';
import { insertNew } from '../../outbox/store-messages';
import { parseStoredSettings } from '../../settings/settings';
import { dropChunk, restockChunk, type Chunk } from './recipients';
import type { Signal, SignalStore } from './signals';

/** Recipients per transaction. */
export const ALERT_CHUNK = 500;
/** How long a signal waits for Shopify's answer before it is given back for later. */
const LOOKUP_DEADLINE_MS = 10_000;

/** Another runner holds the signal now (this one's claim ran out): it wrote nothing more. */
export class ClaimLost extends Error {}

export type Outcome = { state: 'done' | 'dropped'; note: string } | { state: 'later'; note: string };

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
  if (restock) {
    // the stock as it is now: a webhook is a signal, and a variant may sell out again at once
    const v = await deps.variants.find(ref, s.variantId, deadline, { fresh: true });
    if (v.kind === 'unknown') return { state: 'dropped', note: 'Shopify has no such variant' };
    if (v.kind === 'unavailable') return { state: 'later', note: `the variant could not be read: ${v.reason}` };
    if (!v.variant.availableForSale) return { state: 'done', note: 'sold out again before it could be announced' };
  }
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
    // a drop's price is the update's, which the catalog holds now; a restock's is the catalog's
    price: restock ? described.price : (s.price ?? described.price),
    currency: described.currency,
  };
  const status = shop.connection.status === 'connected' ? 'queued' : 'held';
  let queued = s.queued;
  for (;;) {
    const at = deps.now();
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
    // the event loop turns between chunks: requests and other work go on meanwhile
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (stopping()) return { state: 'later', note: 'the process stopped mid-way; the rest goes next' };
  }
  return { state: 'done', note: `${queued} message(s) queued` };
}
