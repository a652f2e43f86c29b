import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { cachedRead } from './cached-read';

/** How old a gauge read from the database may be before a scrape has it read again. */
export const GAUGE_MAX_AGE_MS = 15_000;

export interface MetricsOptions {
  /** Node's process metrics (CPU, memory, event loop). */
  defaultMetrics?: boolean;
  /** GAUGE_MAX_AGE_MS by default. */
  gaugeMaxAgeMs?: number;
  /** Milliseconds, for the gauges' age (the app's clock in tests). */
  now?: () => number;
  /** Told when a background read of a gauge fails (the last value stays served). */
  onGaugeError?: (err: unknown) => void;
}

/** Every metric the app exports, on a registry of its own (no global state, so tests can build many apps). */
export class Metrics {
  readonly registry = new Registry();
  readonly webhooksReceived = new Counter({
    name: 'connector_webhooks_received_total',
    help: 'Shopify webhooks received, by topic and outcome (accepted, ignored, duplicate, invalid_hmac, bad_request)',
    labelNames: ['topic', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly deliveries = new Counter({
    name: 'connector_deliveries_total',
    help: 'Send attempts to the email service, by classified outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'connector_service_429_total',
    help: '429 responses received from the email service',
    registers: [this.registry],
  });
  readonly pacerEvents = new Counter({
    name: 'connector_pacer_events_total',
    help: 'Per-workspace pacing: sent (a send slot taken), late (a slot taken but answered too late to use, given up), slowed (the next send pushed back because the service counts requests we did not make), rate_limited (a 429 backed off)',
    labelNames: ['event'] as const,
    registers: [this.registry],
  });
  readonly deliveryLatency = new Histogram({
    name: 'connector_delivery_latency_seconds',
    help: 'From a message becoming due to the service accepting it',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600],
    registers: [this.registry],
  });
  readonly enrichment = new Counter({
    name: 'connector_enrichment_total',
    help: 'Product image lookups for line items, by outcome (hit, fetched, no_scope, timeout, throttled, failed)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly unconfirmed = new Counter({
    name: 'connector_deliveries_unconfirmed_total',
    help: 'Messages the service accepted whose delivery could not be recorded: marked delivered_unconfirmed, never sent again',
    registers: [this.registry],
  });
  readonly skipped = new Counter({
    name: 'connector_messages_skipped_total',
    help: 'Events recorded as skipped and never sent (no valid email address, a checkout too old to abandon), by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: 'connector_outbox_messages',
    help: 'Outbox messages by status',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  readonly receiptsProcessed = new Counter({
    name: 'connector_receipts_processed_total',
    help: 'Receipts processed by stage 2, by outcome (accepted, ignored, rejected, erased)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly pixelRequests = new Counter({
    name: 'connector_pixel_requests_total',
    help: 'Requests to POST /pixel/events, by outcome (accepted, unknown_key, rate_limited, rate_limited_ip, bad_request, too_large, unsupported_type, unavailable)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly notifyMeRequests = new Counter({
    name: 'connector_notify_me_requests_total',
    help: "Requests of the storefront's notify-me form through the app proxy, by outcome (created, renewed, in_stock, bad_signature, stale, invalid_request, invalid_email, email_required, no_email, unknown_variant, rate_limited, unavailable, not_available)",
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly productAlerts = new Counter({
    name: 'connector_product_alerts_total',
    help: 'Restocks and price drops Shopify signalled, by kind (restock, price_drop) and how their turn ended (done: messages queued or none to send; dropped: with why; later: Shopify could not be asked yet)',
    labelNames: ['kind', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly pixelEvents = new Counter({
    name: 'connector_pixel_events_total',
    help: "Storefront events read by stage 2, by outcome (accepted, collapsed, waiting for an email, waiting_for_product: Shopify has not described its product yet, described: it was later, ignored, no_consent, invalid, dropped for their product, limited by the email's daily limits) and waiting events deleted unsent (expired)",
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  // the storefront's trust checks (src/processing/storefront/trust.ts, resolve.ts); the metric names
  // keep their first word, claims, for the dashboards that chart them
  readonly pendingIdentities = new Counter({
    name: 'connector_pixel_claims_total',
    help: 'Emails storefront visitors gave (pending identities), by outcome: pending (not vouched for by Shopify yet), vouched (identified the visitor), expired (deleted unvouched)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly pendingIdentitiesWaiting = new Gauge({
    name: 'connector_pixel_claims_pending',
    help: 'Pending identities: emails storefront visitors gave, waiting for Shopify to vouch for them, now',
    registers: [this.registry],
  });
  readonly pixelProductsDropped = new Counter({
    name: 'connector_pixel_products_dropped_total',
    help: 'Storefront views and adds to cart dropped for their product: unknown (the shop has no such product or variant), no_scope (read_products not granted), expired (Shopify did not describe it within a day)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly pixelWaitingForProducts = new Gauge({
    name: 'connector_pixel_events_waiting_for_products',
    help: 'Storefront events waiting now for Shopify to describe their products (and the later events of their visitors, held behind them)',
    registers: [this.registry],
  });
  readonly pixelAdminCalls = new Counter({
    name: 'connector_pixel_admin_api_calls_total',
    help: 'Admin API calls made for storefront events, by kind (customers, products)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly receiptsPending = new Gauge({
    name: 'connector_receipts_pending',
    help: 'Webhooks and pixel batches stored by stage 1 and not yet processed by stage 2',
    registers: [this.registry],
  });
  readonly receiptsOldestAge = new Gauge({
    name: 'connector_receipts_oldest_pending_age_seconds',
    help: 'Age of the oldest receipt not yet processed (0 when none): the intake lag',
    registers: [this.registry],
  });

  readonly classSends = new Counter({
    name: 'connector_class_sends_total',
    help: 'Requests sent to the email service, by delivery class (critical, triggers, behaviour, history)',
    labelNames: ['class'] as const,
    registers: [this.registry],
  });
  readonly classExpired = new Counter({
    name: 'connector_class_expired_total',
    help: 'Messages expired unsent past their class’s maximum useful age, by delivery class',
    labelNames: ['class'] as const,
    registers: [this.registry],
  });
  readonly classQueued = new Gauge({
    name: 'connector_class_queued',
    help: 'Messages due now and waiting to be sent, by delivery class (critical, triggers, behaviour, history), over every shop',
    labelNames: ['class'] as const,
    registers: [this.registry],
  });
  readonly classOldestAge = new Gauge({
    name: 'connector_class_oldest_queued_age_seconds',
    help: 'Since the oldest due message of each delivery class became due (0 when none waits)',
    labelNames: ['class'] as const,
    registers: [this.registry],
  });
  readonly loopFailures = new Counter({
    name: 'connector_background_failures_total',
    help: 'Failures of background loops (lane, worker_pass, stage2, backfill, key_check, key_rotation, pixel_sweep, pixel_retry, stock_sweep, holds_reprobe), each followed by a wait',
    labelNames: ['loop'] as const,
    registers: [this.registry],
  });
  readonly keyUnreadable = new Counter({
    name: 'connector_key_unreadable_total',
    help: 'Lanes that found a shop’s stored API key unreadable with every configured key and held its deliveries (key_unreadable)',
    registers: [this.registry],
  });
  readonly storedSecrets = new Gauge({
    name: 'connector_stored_secrets',
    help: 'Stored API keys and Shopify tokens by the key they are encrypted with (current, previous, unreadable), as the last key scan found them',
    labelNames: ['key'] as const,
    registers: [this.registry],
  });
  private readonly gauges: Required<Pick<MetricsOptions, 'gaugeMaxAgeMs' | 'now'>> & Pick<MetricsOptions, 'onGaugeError'>;

  constructor(opts: MetricsOptions = {}) {
    // the event-loop delay is sampled every 20 ms, not prom-client's 10: the sampling timer wakes
    // an idle process, so every tick it saves is CPU an idle process does not spend
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 20 });
    this.gauges = { gaugeMaxAgeMs: opts.gaugeMaxAgeMs ?? GAUGE_MAX_AGE_MS, now: opts.now ?? Date.now, onGaugeError: opts.onGaugeError };
  }

  private cached<T>(read: () => Promise<T>): () => Promise<T> {
    return cachedRead(read, { maxAgeMs: this.gauges.gaugeMaxAgeMs, now: this.gauges.now, onError: this.gauges.onGaugeError });
  }

  /**
   * The queue-depth gauge comes from `read` (messages by status), at most one read per
   * gaugeMaxAgeMs whatever the number of scrapes (cachedRead).
   */
  onScrape(read: () => Promise<Record<string, number>>): void {
    const gauge = this.queueDepth;
    const counts = this.cached(read);
    (gauge as unknown as { collect: () => Promise<void> }).collect = async () => {
      const byStatus = await counts();
      gauge.reset();
      for (const [status, n] of Object.entries(byStatus)) gauge.set({ status }, n);
    };
  }

  /** The pending-claims gauge comes from `read`, cached as onScrape's. */
  onScrapeClaims(read: () => Promise<number>): void {
    const pending = this.cached(read);
    (this.pendingIdentitiesWaiting as unknown as { collect: () => Promise<void> }).collect = async () =>
      this.pendingIdentitiesWaiting.set(await pending());
  }

  /** The gauge of storefront events waiting for product data comes from `read`, cached as onScrape's. */
  onScrapeWaitingForProducts(read: () => Promise<number>): void {
    const waiting = this.cached(read);
    (this.pixelWaitingForProducts as unknown as { collect: () => Promise<void> }).collect = async () =>
      this.pixelWaitingForProducts.set(await waiting());
  }

  /** The per-class queue gauges come from `read`, both from one read, cached as onScrape's. */
  onScrapeClasses(read: () => Promise<Array<{ class: string; queued: number; oldestAgeS: number }>>): void {
    const classes = this.cached(read);
    (this.classQueued as unknown as { collect: () => Promise<void> }).collect = async () => {
      for (const c of await classes()) this.classQueued.set({ class: c.class }, c.queued);
    };
    (this.classOldestAge as unknown as { collect: () => Promise<void> }).collect = async () => {
      for (const c of await classes()) this.classOldestAge.set({ class: c.class }, c.oldestAgeS);
    };
  }

  /** The intake-lag gauges come from `read`, both from one read, cached as onScrape's. */
  onScrapeLag(read: () => Promise<{ pending: number; oldestAgeS: number }>): void {
    const lag = this.cached(read);
    (this.receiptsPending as unknown as { collect: () => Promise<void> }).collect = async () =>
      this.receiptsPending.set((await lag()).pending);
    (this.receiptsOldestAge as unknown as { collect: () => Promise<void> }).collect = async () =>
      this.receiptsOldestAge.set((await lag()).oldestAgeS);
  }
}
