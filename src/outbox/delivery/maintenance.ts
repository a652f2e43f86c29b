// Housekeeping between the worker's passes, each on its own interval: the expired locks of
// processes that stopped go back to the queue (their shops indexed as due again); each hour, the
// usage counts past their retention go; now and then, the safety reconcile of the queue of queues
// with the outbox, which logs what it finds (every writer indexes its own work, so anything found
// is a missed wake-up).
import type { Logger } from '../../observability/logger';
import type { ShopQueue } from '../due';
import type { OutboxRepository } from '../repository';
import type { UsageStats } from '../usage-stats';
import type { WorkerTuning } from './tuning';

/** How often the usage counts past their retention are deleted. */
const USAGE_PRUNE_EVERY_MS = 3_600_000;

export interface MaintenanceDeps {
  repo: OutboxRepository;
  queue: ShopQueue;
  logger: Logger;
  usage: UsageStats;
  now: () => Date;
  tuning: Pick<WorkerTuning, 'sweepEveryMs' | 'reconcileEveryMs'>;
}

export class Maintenance {
  private lastSweep = 0;
  private lastUsagePrune = 0;
  private lastReconcile = Date.now();

  /** `inHand`: the messages in this process's hands, whose locks are its own to release. */
  constructor(
    private readonly deps: MaintenanceDeps,
    private readonly inHand: ReadonlySet<number>,
  ) {}

  /** Runs what is due. */
  async run(): Promise<void> {
    const { repo, queue, logger } = this.deps;
    const now = Date.now();
    if (now - this.lastSweep >= this.deps.tuning.sweepEveryMs) {
      this.lastSweep = now;
      const requeued = await repo.sweepExpiredLocks(this.deps.now(), [...this.inHand]);
      if (requeued.length) {
        logger.warn({ released: requeued.length }, 'released messages locked by a process that stopped');
        await queue.lower(requeued);
      }
    }
    if (now - this.lastUsagePrune >= USAGE_PRUNE_EVERY_MS) {
      this.lastUsagePrune = now;
      await this.deps.usage.prune(this.deps.now());
    }
    if (now - this.lastReconcile >= this.deps.tuning.reconcileEveryMs) {
      this.lastReconcile = now;
      const missed = await queue.reconcile();
      if (missed.length)
        logger.warn(
          { shops: missed.length, sample: missed.slice(0, 5) },
          'queued work that was not indexed as due was found by the safety reconcile',
        );
    }
  }
}
