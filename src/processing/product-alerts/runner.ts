// The product-alert runner: takes the restocks and price drops Shopify signalled (signals.ts) and
// queues their back_in_stock and price_dropped messages, a chunk of recipients per transaction
// (recipients.ts) with a pause as long after each, so a restock of a popular product, thousands of
// messages, never holds the database for long and order confirmations go first (they are
// `critical`; these are not).
// What the messages say of the product is Shopify's: a restock is read from the Admin API as it is
// now (a variant sold out again by then is nobody's news), a drop from the catalog the update just
// refreshed. When Shopify cannot be asked, the signal waits, longer each time, and is kept.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db, DbProvider } from '../../db/client';
import { backoffDelayMs, type BackoffPolicy } from '../../lib/backoff';
import { BackgroundLoop } from '../../lib/background-loop';
import { alertMessage, type AlertProduct } from '../../mapping/product-alerts';
import type { LoopFailures } from '../../observability/log-once';
import type { Logger } from '../../observability/logger';
import type { Metrics } from '../../observability/metrics';
import { lowerDue } from '../../outbox/due';
import { insertNew } from '../../outbox/store-messages';
import type { ProductCatalog } from '../../integrations/shopify/products';
import type { VariantLookup } from '../../integrations/shopify/variant-lookup';
import { parseStoredSettings } from '../../settings/settings';
import { dropChunk, restockChunk, type Chunk } from './recipients';
import { SIGNAL_KEPT_MS, type Signal, type SignalStore } from './signals';

/**
 * Recipients per transaction: about 25 ms of writing each on SQLite, whose one connection intake,
 * stage 2 and delivery share, so an order confirmation waits behind one chunk at most.
 */
export const ALERT_CHUNK = 100;
/** How long a signal waits for Shopify's answer before it is given back for later. */
const LOOKUP_DEADLINE_MS = 10_000;
/** When Shopify cannot be asked: 30 s, doubling to an hour. */
const SIGNAL_BACKOFF: BackoffPolicy = { baseMs: 30_000, maxMs: 3_600_000, jitter: 0.2 };
/** A signal Shopify could not be asked about for this long is dropped, with why. */
const SIGNAL_GIVE_UP_MS = 24 * 3_600_000;

export interface AlertRunnerDeps {
  db: Db;
  provider: DbProvider;
  logger: Logger;
  metrics: Metrics;
  now: () => Date;
  signals: SignalStore;
  products: Pick<ProductCatalog, 'describe'>;
  variants: VariantLookup;
  failures: LoopFailures;
  /** After a chunk committed: its messages are due now. */
  onQueued: (shopId: string) => void;
  /** The slow safety poll when no wake-up comes. Default 15 s. */
  pollMs?: number;
}

class ClaimLost extends Error {}

/** How a signal's turn ends: done or dropped for good, later after a growing wait, or resumed at once (the process stopped). */
type Outcome = { state: 'done' | 'dropped' | 'later' | 'resume'; note: string };

export class ProductAlertRunner {
  readonly owner = `alerts-${randomUUID().slice(0, 8)}`;
  private readonly loop: BackgroundLoop;
  private lastPrune = 0;
  /** The pass under way: passes run one at a time, the loop's and those run on demand alike. */
  private pass: Promise<number> = Promise.resolve(0);

  constructor(private readonly deps: AlertRunnerDeps) {
    this.loop = new BackgroundLoop({
      pass: async () => {
        await this.runDue();
        return deps.pollMs ?? 15_000;
      },
      onFailure: (err, retryInMs) =>
        deps.failures.report('product_alerts', err, 'product alerts failed; retrying after a growing wait', { retryInMs }),
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** A signal was recorded (in this process). */
  nudge(): void {
    this.loop.wake();
  }

  /** Works every due signal, after any pass under way; returns how many it took. */
  runDue(): Promise<number> {
    const next = this.pass.catch(() => 0).then(() => this.drain());
    this.pass = next;
    return next;
  }

  private async drain(): Promise<number> {
    let n = 0;
    for (
      let s = await this.deps.signals.claim(this.owner, this.deps.now());
      s;
      s = await this.deps.signals.claim(this.owner, this.deps.now())
    ) {
      n += 1;
      await this.work(s);
      if (this.loop.stopped) break;
    }
    if (Date.now() - this.lastPrune > 3_600_000) {
      this.lastPrune = Date.now();
      await this.deps.signals.prune(new Date(this.deps.now().getTime() - SIGNAL_KEPT_MS));
    }
    return n;
  }

  private async work(s: Signal): Promise<void> {
    const { signals, now } = this.deps;
    let outcome: Outcome;
    try {
      outcome = await this.alert(s);
    } catch (err) {
      if (err instanceof ClaimLost) return;
      throw err;
    }
    if (outcome.state === 'resume') {
      await signals.later(s, this.owner, now(), outcome.note, now());
      return;
    }
    if (outcome.state === 'later') {
      if (now().getTime() - s.createdAt.getTime() > SIGNAL_GIVE_UP_MS) {
        await signals.finish(s, this.owner, 'dropped', `Shopify could not be asked for a day: ${outcome.note}`, now());
        this.count(s, 'dropped');
        return;
      }
      const wait = backoffDelayMs(s.attempts, SIGNAL_BACKOFF);
      await signals.later(s, this.owner, new Date(now().getTime() + wait), outcome.note, now());
      this.count(s, 'later');
      return;
    }
    await signals.finish(s, this.owner, outcome.state, outcome.note, now());
    this.count(s, outcome.state);
  }

  private count(s: Signal, outcome: string): void {
    this.deps.metrics.productAlerts.inc({ kind: s.kind, outcome });
  }

  /** One signal to its end: its messages queued, or why not, or 'later'. */
  private async alert(s: Signal): Promise<Outcome> {
    const { db } = this.deps;
    const shop = await db.shop.findUnique({ where: { id: s.shopId }, include: { connection: true, settings: true } });
    if (!shop?.connection || shop.uninstalledAt) return { state: 'dropped', note: 'the shop is not connected' };
    const settings = parseStoredSettings(shop.settings?.data);
    const restock = s.kind === 'restock';
    if (!settings.events[restock ? 'back_in_stock' : 'price_dropped'])
      return { state: 'done', note: `${restock ? 'back_in_stock' : 'price_dropped'} is turned off` };
    const deadline = Date.now() + LOOKUP_DEADLINE_MS;
    const ref = { id: shop.id, domain: shop.domain };
    // the variant as it is now: a webhook is a signal, delivered in any order, and a variant may
    // sell out again, or its price go back up, at once
    const v = await this.deps.variants.find(ref, s.variantId, deadline, { fresh: true });
    if (v.kind === 'unknown') return { state: 'dropped', note: 'Shopify has no such variant' };
    if (v.kind === 'unavailable') return { state: 'later', note: `the variant could not be read: ${v.reason}` };
    if (restock && !v.variant.availableForSale) return { state: 'done', note: 'sold out again before it could be announced' };
    if (!restock && v.variant.price !== null && s.price !== null && Math.round(v.variant.price * 100) > Math.round(s.price * 100))
      return { state: 'done', note: 'the price went back up before the drop could be announced' };
    const described = (await this.deps.products.describe(ref, [{ product_id: s.productId, variant_id: s.variantId }], deadline)).items[0];
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
      const at = this.deps.now();
      const started = Date.now();
      const n = await db.$transaction(
        async (tx) => {
          const chunk: Chunk = restock
            ? await restockChunk(tx, this.deps.provider, s.shopId, s.variantId, at, ALERT_CHUNK)
            : await dropChunk(tx, this.deps.provider, s.shopId, s.variantId, at, ALERT_CHUNK);
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
          const inserted = await insertNew(tx, this.deps.provider, messages, {
            shopId: s.shopId,
            status,
            heldReason: status === 'held' ? 'invalid_key' : null,
          });
          if (!(await this.deps.signals.progress(tx, s, this.owner, inserted, at))) throw new ClaimLost();
          if (inserted && status === 'queued') await lowerDue(tx, this.deps.provider, [{ shopId: s.shopId, runAt: at }]);
          return inserted;
        },
        { maxWait: 10_000, timeout: 30_000 },
      );
      if (n < 0) break;
      queued += n;
      if (n > 0) this.deps.onQueued(s.shopId);
      // at most half of the database's time: after each chunk, a pause as long as it took, so the
      // webhooks, stage 2 and sends waiting for the connection go first (sending takes far longer
      // than queueing anyway: 10,000 messages are 1,000 s at 10 a second)
      await sleep(Math.min(1_000, Date.now() - started));
      if (this.loop.stopped) return { state: 'resume', note: 'the process stopped mid-way; the rest goes next' };
    }
    return { state: 'done', note: `${queued} message(s) queued` };
  }
}
