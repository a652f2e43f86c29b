// The product-alert runner: takes the restocks and price drops Shopify signalled (signals.ts) and
// has each queue its back_in_stock and price_dropped messages (alert.ts), a chunk of recipients per
// transaction with a pause as long after each, so a restock of a popular product, thousands of
// messages, never holds the database for long and order confirmations go first (they are
// `critical`; these are not). When Shopify
// cannot be asked, the signal waits, longer each time, and is kept. The loop reaches the database
// only through the signals' store and the use case.
import { randomUUID } from 'node:crypto';
import { backoffDelayMs, type BackoffPolicy } from '../../lib/backoff';
import { BackgroundLoop } from '../../lib/background-loop';
import type { LoopFailures } from '../../observability/log-once';
import type { Logger } from '../../observability/logger';
import type { Metrics } from '../../observability/metrics';
import { alertSignal, ClaimLost, type AlertDeps, type Outcome } from './alert';
import { SIGNAL_KEPT_MS, type Signal, type SignalStore } from './signals';

/** When Shopify cannot be asked: 30 s, doubling to an hour. */
const SIGNAL_BACKOFF: BackoffPolicy = { baseMs: 30_000, maxMs: 3_600_000, jitter: 0.2 };
/** A signal Shopify could not be asked about for this long is dropped, with why. */
const SIGNAL_GIVE_UP_MS = 24 * 3_600_000;

export interface AlertRunnerDeps extends AlertDeps {
  logger: Logger;
  metrics: Metrics;
  signals: SignalStore;
  failures: LoopFailures;
  /** The slow safety poll when no wake-up comes. Default 15 s. */
  pollMs?: number;
}

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
      outcome = await alertSignal(this.deps, s, this.owner, () => this.loop.stopped);
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
}
