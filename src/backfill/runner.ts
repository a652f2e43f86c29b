// The historical import runner. It claims backfills under a lease (renewed by a heartbeat; a
// backfill whose lease expired, because its process died, is taken over), and runs each as a
// Job (job.ts): Shopify bulk query, then the JSONL result streamed into the outbox's
// historical lane in resumable batches. It also wakes a job waiting on a bulk operation when
// the bulk_operations/finish webhook arrives. stop() is graceful: leases are given back, and
// the unsaved part of a batch is simply read again by whoever continues.
import { randomUUID } from 'node:crypto';
import type { Backfill } from '@prisma/client';
import { Backoff, SHOP_BACKOFF } from '../lib/backoff';
import { BackgroundLoop } from '../lib/background-loop';
import { LogOnce, LoopFailures } from '../observability/log-once';
import type { BackfillRunnerDeps } from './deps';
import { InvalidLineError, LineTooLongError } from './jsonl';
import { Fatal, Job, Stop, type StopReason } from './job';
import { BulkSourceError } from './shopify-bulk';
import { BackfillStore } from './store';

export type { BackfillRunnerDeps } from './deps';

export class BackfillRunner {
  readonly runnerId: string;
  private readonly now: () => Date;
  private readonly store: BackfillStore;
  private readonly jobs = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private readonly opWaiters = new Map<string, () => void>();
  /** Operations whose finish webhook arrived while nobody was waiting (between two polls). */
  private readonly finishedOps = new Set<string>();
  private readonly loop: BackgroundLoop;
  /** A job that crashed is not claimed again here until its growing wait is over. */
  private readonly jobBackoff = new Backoff<string>(SHOP_BACKOFF);
  private readonly crashedIds = new Set<string>();
  private readonly failures: LoopFailures;

  constructor(private readonly deps: BackfillRunnerDeps) {
    this.runnerId = deps.runnerId ?? `b-${randomUUID().slice(0, 8)}`;
    this.failures = new LoopFailures(new LogOnce(deps.logger, 60_000), deps.metrics?.loopFailures);
    this.now = deps.now ?? (() => new Date());
    this.store = new BackfillStore(deps.db, deps.provider, this.now, this.runnerId, this.leaseMs);
    // looking for work fails when the database is away: growing waits
    this.loop = new BackgroundLoop({
      pass: () => this.claimWork(),
      onFailure: (err, retryInMs) =>
        this.failures.report('backfill', err, 'backfill runner: looking for work failed; retrying after a growing wait', { retryInMs }),
    });
  }

  private get leaseMs(): number {
    return this.deps.leaseMs ?? 60_000;
  }

  start(): void {
    this.loop.start();
  }

  /** Looks for work now (after a backfill was created). */
  wake(): void {
    this.loop.wake();
  }

  /** Graceful: stops every job at its next step, gives the leases back. Unsaved reading is re-read later. */
  async stop(): Promise<void> {
    await this.halt('shutdown');
  }

  /** As if the process died: jobs stop where they are and keep their leases until they expire. For tests. */
  async crash(): Promise<void> {
    await this.halt('crash');
  }

  private async halt(reason: StopReason): Promise<void> {
    const loop = this.loop.stop();
    for (const job of this.jobs.values()) job.controller.abort(new Stop(reason));
    await loop;
    await Promise.all([...this.jobs.values()].map((j) => j.done));
  }

  /**
   * The bulk_operations/finish webhook: wakes the import waiting on that operation. Returns
   * whether the operation belongs to an import (a runner in another process polls on its own).
   */
  async onBulkOperationFinish(shopDomain: string, payload: unknown): Promise<boolean> {
    const id = (payload as { admin_graphql_api_id?: unknown } | null)?.admin_graphql_api_id;
    if (typeof id !== 'string' || !id) return false;
    const waiter = this.opWaiters.get(id);
    if (waiter) {
      waiter();
      return true;
    }
    const known = (await this.store.findByOperation(shopDomain, id)) !== null;
    if (known) {
      this.finishedOps.add(id);
      if (this.finishedOps.size > 1000) this.finishedOps.delete(this.finishedOps.values().next().value!);
    }
    return known;
  }

  get activeJobs(): number {
    return this.jobs.size;
  }

  /** Claims backfills while there is room for another job; returns when to look again. */
  private async claimWork(): Promise<number> {
    while (this.jobs.size < (this.deps.maxConcurrent ?? 2) && !this.loop.stopped) {
      const b = await this.store.claimNext([...this.jobs.keys(), ...this.backingOff()]);
      if (!b) break;
      this.launch(b);
    }
    return this.deps.pollMs ?? 2_000;
  }

  /** Imports whose last job crashed and whose wait is not over. */
  private backingOff(): string[] {
    const now = Date.now();
    return [...this.crashedIds].filter((id) => this.jobBackoff.until(id) > now);
  }

  private launch(b: Backfill): void {
    const controller = new AbortController();
    const done = this.runJob(b, controller)
      .then(
        () => {
          this.jobBackoff.succeed(b.id);
          this.crashedIds.delete(b.id);
        },
        (err: unknown) => {
          // claimed again here only after a growing wait; its lease lets no other process take it meanwhile
          const delay = this.jobBackoff.fail(b.id);
          this.crashedIds.add(b.id);
          this.failures.report('backfill', err, 'backfill job crashed; resumed after a wait', {
            key: `backfill:${b.id}`,
            fields: { backfillId: b.id },
            retryInMs: delay,
          });
        },
      )
      .finally(() => {
        this.jobs.delete(b.id);
        if (!this.loop.stopped) this.loop.wake();
      });
    this.jobs.set(b.id, { controller, done });
  }

  private async runJob(b: Backfill, controller: AbortController): Promise<void> {
    const { logger } = this.deps;
    const signal = controller.signal;
    const job = new Job(this.deps, this.store, b, signal, this.now, (id, ms) => this.waitOperation(id, ms, signal));
    const heartbeat = setInterval(
      () => {
        this.store.renew(b.id).then(
          (ok) => {
            if (!ok && !signal.aborted) controller.abort(new Stop('fence'));
          },
          (err: unknown) => logger.warn({ backfillId: b.id, err: (err as Error).message }, 'backfill lease renewal failed'),
        );
      },
      Math.max(50, Math.floor(this.leaseMs / 3)),
    );
    try {
      logger.info({ backfillId: b.id, shopId: b.shopId, kinds: b.kinds }, 'backfill started or resumed');
      await job.run();
    } catch (err) {
      const reason = signal.aborted ? (signal.reason as Stop).reason : err instanceof Stop ? err.reason : null;
      if (reason === 'crash') return;
      if (reason === 'shutdown') {
        await this.store.release(b.id).catch(() => undefined);
        return;
      }
      if (reason === 'fence' || reason === 'gone') {
        await job.afterLostFence();
        return;
      }
      const message =
        err instanceof Fatal || err instanceof BulkSourceError || err instanceof InvalidLineError || err instanceof LineTooLongError
          ? err.message
          : `The import stopped on an unexpected error: ${(err as Error).message}`.slice(0, 500);
      logger.warn({ backfillId: b.id, err: message }, 'backfill failed');
      await job.fail(message);
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Sleeps `ms`, or less when the operation's finish webhook arrives. */
  private waitOperation(id: string, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      if (this.finishedOps.delete(id)) return resolve();
      const done = () => {
        clearTimeout(t);
        signal.removeEventListener('abort', onAbort);
        if (this.opWaiters.get(id) === done) this.opWaiters.delete(id);
        resolve();
      };
      const onAbort = () => {
        clearTimeout(t);
        if (this.opWaiters.get(id) === done) this.opWaiters.delete(id);
        reject(signal.reason);
      };
      const t = setTimeout(done, ms);
      this.opWaiters.set(id, done);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
