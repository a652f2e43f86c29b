// Stage 2: takes stored receipts in batches, in arrival order per shop, and runs the use cases
// on them (mapping, change detection, abandonment, shipping state, GDPR). Receipts are spread
// over partitions by shop; a process works the partitions it leased (several at once, oldest
// pending first, in batches that span them), so one shop's receipts are processed by one process
// at a time, in order, while other partitions run elsewhere.
// Each batch's effects and the marking of its receipts commit in one transaction, fenced on the
// lease: a crash mid-batch redoes the batch, and nothing is doubled (messages are unique by
// source id, receipts are marked only while still pending).
import { randomUUID } from 'node:crypto';
import type { Db, DbProvider } from '../db/client';
import { turnOfTheLoop } from '../db/raw';
import { driverTransaction } from '../db/transaction';
import { BackgroundLoop } from '../lib/background-loop';
import { LogOnce, LoopFailures } from '../observability/log-once';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { lowerDue, type DueEntry } from '../outbox/due';
import type { ForwardResult, ParsedReceipt } from './forward/forward-receipts';
import type { GdprResult } from './privacy/gdpr';
import { handlingOf, isSerial, type SideEffectTopic } from './topics';
import type { ForwardStore } from './forward/forward-store';
import { processSafely, type UnitRunner } from './isolate';
import { LoopBudget } from './loop-budget';
import { LeaseLost, ReceiptPartitions, type Turn } from './partitions';
import type { PixelStage, SideHandler } from './plan';
import { parse, unitEnd, type Parsed } from './unit';
import type { PendingReceipt, ReceiptOutcome, ReceiptStore } from '../intake/receipt-store';

export interface ProcessorDeps {
  db: Db;
  provider: DbProvider;
  logger: Logger;
  metrics: Metrics;
  receipts: ReceiptStore;
  forwardStore: ForwardStore;
  forward: (items: ParsedReceipt[]) => Promise<ForwardResult>;
  gdpr: { handle(r: ParsedReceipt): Promise<GdprResult> };
  /** Topics handled by a side handler rather than forwarded. */
  sideHandlers?: Record<SideEffectTopic, SideHandler>;
  /** Storefront pixel batches (receipts of kind 'pixel'); ignored without it. */
  pixel?: PixelStage;
  /** After a commit that queued messages: index them and wake the delivery workers. */
  onDue: (entries: DueEntry[]) => void;
  now?: () => Date;
  processorId?: string;
  /** Receipts per batch. */
  batchSize?: number;
  /** How long a turn on the leased partitions lasts before they are given up and leased again (ms). */
  turnMs?: number;
  /**
   * Partitions one process leases at once (default half of them): a batch spans them, so 200
   * shops with a receipt each take two batches rather than sixteen, and a second process finds
   * the other half free.
   */
  partitionsPerTurn?: number;
  /** A partition's lease, renewed by every batch. */
  leaseMs?: number;
  /** The slow safety poll when no wake-up comes. */
  safetyPollMs?: number;
  /**
   * Under a stream of receipts, how long a wake-up that comes within this time of the last
   * batch waits for more before the next batch (default 10 ms; 0: never). See linger().
   */
  lingerMs?: number;
  /** How long processed receipts are kept for deduplication (RECEIPT_RETENTION_DAYS). */
  retentionMs?: number;
}

export class ReceiptProcessor {
  readonly processorId: string;
  private readonly now: () => Date;
  private readonly loop: BackgroundLoop;
  private lastRetention = 0;
  /** When the last drain that processed anything ended (epoch ms). */
  private lastBatchAt = 0;
  private readonly partitions: ReceiptPartitions;
  private readonly failures: LoopFailures;

  constructor(private readonly deps: ProcessorDeps) {
    this.processorId = deps.processorId ?? `p-${randomUUID().slice(0, 8)}`;
    this.now = deps.now ?? (() => new Date());
    this.failures = new LoopFailures(new LogOnce(deps.logger, 60_000), deps.metrics.loopFailures);
    this.partitions = new ReceiptPartitions({
      db: deps.db,
      provider: deps.provider,
      owner: this.processorId,
      now: this.now,
      leaseMs: deps.leaseMs,
      perTurn: deps.partitionsPerTurn,
    });
    this.loop = new BackgroundLoop({
      beforePass: () => this.linger(),
      pass: async () => {
        if ((await this.drainAll()) > 0) this.lastBatchAt = Date.now();
        await this.housekeeping();
        return this.deps.safetyPollMs ?? 5_000;
      },
      onFailure: (err, retryInMs) =>
        this.failures.report('stage2', err, 'receipt processing failed; retrying after a growing wait', { retryInMs }),
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** New receipts were stored (here or in a web process). */
  nudge(): void {
    this.loop.wake();
  }

  private get stopping(): boolean {
    return this.loop.stopped;
  }

  /**
   * Receipts arriving one every few ms (many shops' orders at once) would each wake a batch of
   * one or two receipts, and a batch's fixed cost (lease, the plan's reads, a transaction: about
   * a dozen statements) would be most of stage 2's. A wake-up this soon after a batch waits a few
   * ms, so the receipts of that time share one; an idle shop's receipt goes at once.
   */
  private async linger(): Promise<void> {
    const linger = this.deps.lingerMs ?? 10;
    if (linger > 0 && Date.now() - this.lastBatchAt < linger && !this.stopping) await new Promise((r) => setTimeout(r, linger));
  }

  /**
   * Processes everything pending now: leases partitions with pending receipts (oldest first),
   * works them in turns of a few seconds, and leases again, until it finds none it could lease;
   * returns how many. Under a stream that never ends it returns after a minute, asking the loop
   * to come straight back, so the hourly housekeeping still gets its turn.
   */
  async drainAll(): Promise<number> {
    await this.partitions.seed();
    let total = 0;
    const started = Date.now();
    while (!this.stopping) {
      if (Date.now() - started > 60_000) {
        this.loop.wake();
        return total;
      }
      const partitions = await this.partitions.lease();
      if (partitions.length === 0) return total;
      const turn: Turn = { partitions, released: false };
      try {
        total += await this.drainLeased(turn);
      } finally {
        // the batch that drained the partitions gave the leases up in its own transaction
        if (!turn.released) await this.partitions.giveUp(partitions);
      }
    }
    return total;
  }

  /**
   * One turn on the leased partitions. A batch (across them, in arrival order) is read once and
   * worked through unit by unit (a compliance receipt is a unit of its own).
   */
  private async drainLeased(turn: Turn): Promise<number> {
    const runner = this.runnerOf(turn);
    let done = 0;
    const started = Date.now();
    const batchSize = this.deps.batchSize ?? 200;
    let queue: PendingReceipt[] = [];
    // a short batch is all there is: receipts stored meanwhile come with a wake-up of their own
    let last = false;
    // a turn of a few seconds (at least one unit), so other processes get the partitions in turn
    for (let first = true; !this.stopping && (first || Date.now() - started < (this.deps.turnMs ?? 5_000)); first = false) {
      if (queue.length === 0) {
        if (!last) queue = await this.deps.receipts.pending(turn.partitions, batchSize);
        if (queue.length === 0) break;
        last = queue.length < batchSize;
      }
      const compliance = isSerial(queue[0]!.topic, queue[0]!.kind);
      const n = await processSafely(runner, queue, last);
      done += n;
      // a backlog on SQLite would otherwise hold off requests, timers and the WAL checkpoint
      // thread's messages until it was drained
      await turnOfTheLoop();
      if (compliance) {
        // a redaction erases receipts after it: the rest is read again
        queue = [];
        last = false;
      } else queue = queue.slice(n);
    }
    return done;
  }

  /** A turn's units, for isolate.ts: a unit, a rejected receipt's record, whether the loop stops. */
  private runnerOf(turn: Turn): UnitRunner {
    return {
      process: (pending, mayRelease) => this.processUnit(turn.partitions, pending, mayRelease ? turn : undefined),
      reject: async (receipt, outcome) => {
        await this.deps.db.$transaction((tx) => this.deps.receipts.markProcessed(tx, [outcome], this.now()));
        this.deps.logger.error(
          { receiptId: receipt.id, topic: receipt.topic, err: outcome.reason },
          'a receipt could not be processed and was recorded as rejected',
        );
        this.count([outcome]);
      },
      stopping: () => this.stopping,
    };
  }

  /**
   * Processes the first unit of the pending receipts: a compliance receipt alone (it changes
   * what the receipts after it may see), or the run of ordinary receipts up to the next one.
   */
  private async processUnit(partitions: number[], pending: PendingReceipt[], turn?: Turn): Promise<number> {
    // only the unit is parsed: the receipts after it wait for units of their own. The loop turns
    // between parses once they have taken a while (a body of megabytes takes tens of ms)
    const budget = new LoopBudget();
    const unit: Parsed[] = [];
    for (const p of pending.slice(0, unitEnd(pending))) {
      unit.push(parse(p));
      await budget.step();
    }
    const gdpr = isSerial(pending[0]!.topic, pending[0]!.kind) ? unit[0]!.receipt : undefined;
    if (gdpr) {
      const res = await this.deps.gdpr.handle(gdpr);
      this.count([res.outcome]);
      if (res.due.length) this.deps.onDue(res.due);
      return 1;
    }
    const outcomes: ReceiptOutcome[] = [];
    const toForward: ParsedReceipt[] = [];
    const pixel: ParsedReceipt[] = [];
    // by the topic table (topics.ts); the privacy and lifecycle topics were units of their own above
    for (const p of unit) {
      const r = p.receipt;
      if (!r) {
        outcomes.push(p.rejected!);
        continue;
      }
      const handling = handlingOf(r.topic, p.kind);
      const side = handling === 'side_effect' ? this.deps.sideHandlers?.[r.topic as SideEffectTopic] : undefined;
      if (handling === 'storefront') {
        if (this.deps.pixel) pixel.push(r);
        else
          outcomes.push({
            id: r.id,
            outcome: 'ignored',
            reason: 'storefront events are not processed here',
            messageCount: 0,
            customerId: null,
          });
      } else if (side) {
        const done = await side(r);
        outcomes.push({ id: r.id, outcome: done.outcome, reason: done.reason ?? null, messageCount: 0, customerId: null });
      } else toForward.push(r);
    }
    const forwarded = toForward.length ? await this.deps.forward(toForward) : null;
    if (forwarded) outcomes.push(...forwarded.outcomes);
    // the storefront's batches, and the emails the unit's webhooks name (pending claims they vouch for)
    const pixelPlan = this.deps.pixel && (pixel.length || toForward.length) ? await this.deps.pixel(pixel, toForward) : null;
    if (pixelPlan) outcomes.push(...pixelPlan.outcomes);
    await budget.step();
    const now = this.now();
    // the last batch of a turn (all of the pending receipts) gives the lease up as it commits
    const release = turn !== undefined && unit.length === pending.length;
    await driverTransaction(
      this.deps.db,
      async (tx) => {
        await this.partitions.renew(tx, partitions, now, release);
        // storefront first: a shopper's adds come before their order, and the order's write
        // cancels the storefront abandonments of its email, those of this batch included
        if (pixelPlan) {
          await pixelPlan.write(tx, now);
          await lowerDue(tx, this.deps.provider, pixelPlan.due);
        }
        if (forwarded) {
          await this.deps.forwardStore.write(tx, forwarded.plan, now);
          await lowerDue(tx, this.deps.provider, forwarded.due);
        }
        const marked = await this.deps.receipts.markProcessed(tx, outcomes, now);
        // fewer than given: another processor did them meanwhile; give this batch up, nothing written
        if (marked !== outcomes.length) throw new LeaseLost(`receipts of partitions ${partitions.join(', ')} were processed elsewhere`);
        // a crash that loses this commit leaves its receipts pending, to be processed again the same
        // way, and nothing outside the database acts on it first: its messages are sent only after
        // a claim, whose durable commit flushes this one (db/transaction.ts)
      },
      { lazyCommit: true },
    );
    if (release) turn.released = true;
    this.count(outcomes);
    const due = [...(forwarded?.due ?? []), ...(pixelPlan?.due ?? [])];
    if (due.length) this.deps.onDue(due);
    return unit.length;
  }

  private count(outcomes: ReceiptOutcome[]): void {
    for (const o of outcomes) this.deps.metrics.receiptsProcessed.inc({ outcome: o.outcome });
  }

  /** Processed receipts past the dedupe window are deleted, about once an hour. */
  private async housekeeping(): Promise<void> {
    if (Date.now() - this.lastRetention < 3_600_000) return;
    this.lastRetention = Date.now();
    const cutoff = new Date(this.now().getTime() - (this.deps.retentionMs ?? 7 * 86_400_000));
    const deleted = await this.deps.receipts.deleteExpired(cutoff);
    if (deleted) this.deps.logger.info({ deleted }, 'deleted receipts past the dedupe window');
  }
}
