import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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
  readonly deliveryLatency = new Histogram({
    name: 'connector_delivery_latency_seconds',
    help: 'From a message becoming due to the service accepting it',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: 'connector_outbox_messages',
    help: 'Outbox messages by status',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** Registers a function that refreshes the queue-depth gauge on each scrape. */
  onScrape(refresh: (set: (status: string, n: number) => void) => Promise<void>): void {
    const gauge = this.queueDepth;
    (gauge as unknown as { collect: () => Promise<void> }).collect = async () => {
      gauge.reset();
      await refresh((status, n) => gauge.set({ status }, n));
    };
  }
}
