// Stage 2's loop: takes stored receipts in batches, in arrival order per shop, and runs the use
// cases on them (mapping, change detection, abandonment, shipping state, GDPR). Receipts are
// spread over partitions by shop; a process works the partitions it leased (partitions.ts:
// several at once, oldest pending first, in batches that span them), so one shop's receipts are
// processed by one process at a time, in order, while other partitions run elsewhere. A batch is
// worked unit by unit (unit.ts): each is planned by its handlers (dispatch.ts) and committed in
// one transaction fenced on the lease (commit.ts); a unit that fails is retried receipt by
// receipt (isolate.ts). This file holds the loop and the turns; it writes no table itself.
import { randomUUID } from 'node:crypto';
import type { Db, DbProvider } from '../db/client';
import { turnOfTheLoop } from '../db/raw';
import { BackgroundLoop } from '../lib/background-loop';
import { LogOnce, LoopFailures } from '../observability/log-once';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import type { DueEntry } from '../outbox/due';
import type { PendingReceipt, ReceiptStore } from '../intake/receipt-store';
import { UnitCommit } from './commit';
import { planUnit, type Handlers } from './dispatch';
import { processSafely, type UnitRunner } from './isolate';
import { ReceiptPartitions, type Turn } from './partitions';
import { isSerial } from './topics';

export interface ProcessorDeps extends Handlers {
  db: Db;
  provider: DbProvider;
  logger: Logger;
  metrics: Metrics;
  receipts: ReceiptStore;
  /** After a commit that queued messages (indexed as due in its transaction): wake the delivery workers. */
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
  /** A partition's lease, renewed by every unit's commit (DEFAULT_LEASE_MS). */
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
  private readonly commit: UnitCommit;
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
    this.commit = new UnitCommit({ ...deps, partitions: this.partitions, now: this.now });
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
        // the unit that drained the partitions gave the leases up in its own transaction
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
      process: async (pending, mayRelease) => {
        const { plans, size, serial } = await planUnit(this.deps, pending);
        // the last unit of a turn (all of the pending receipts) gives the lease up as it commits;
        // one alone (privacy, lifecycle) leaves the receipts after it to be read again
        const release = mayRelease && !serial && size === pending.length;
        await this.commit.unit(turn.partitions, plans, release);
        if (release) turn.released = true;
        return size;
      },
      reject: (receipt, outcome) => this.commit.rejected(receipt, outcome),
      stopping: () => this.stopping,
    };
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
