// The delivery worker: the pass and the lanes. A pass leases shops with DUE work through the
// queue of queues (due.ts), oldest due first, as many as lanes are free, and starts a lane for
// each (lane.ts). Between passes the worker sleeps (lib/background-loop.ts) until the earliest
// future due time, a wake-up (in process or NOTIFY), the next lock sweep or the slow safety poll:
// a shop whose messages all lie in the future costs nothing. A lane that ends gives its shop's
// lease back and wakes the pass only when that can matter. The worker writes no table itself:
// the repository, the queue, the stores and the connection's health do.
import { randomUUID } from 'node:crypto';
import { Backoff, SHOP_BACKOFF } from '../../lib/backoff';
import { BackgroundLoop } from '../../lib/background-loop';
import { LogOnce, LoopFailures } from '../../observability/log-once';
import { DELIVERY_CLASSES, floorsOf } from '../classes';
import { ConnectionStore } from '../connection-store';
import { UsageStats } from '../usage-stats';
import { ConnectionHealth } from './connection-health';
import { runLane, type LaneDeps, type LaneHost } from './lane';
import { Maintenance } from './maintenance';
import type { LaneEnd } from './deliver';
import { LEASE_CONTEXT, ShopContexts, type ContextRow, type ShopContextDeps } from './shop-context';
import { resolveTuning, type WorkerTuning } from './tuning';

/** What a worker is built from: what its lanes need (built once from these), and its own. */
export interface WorkerDeps
  extends ShopContextDeps, Pick<LaneDeps, 'repo' | 'queue' | 'client' | 'logger' | 'random' | 'onScrubbed' | 'requestTimeoutMs'> {
  now?: () => Date;
  workerId?: string;
  /** What differs from DEFAULT_TUNING. */
  tuning?: Partial<WorkerTuning>;
}

export class DeliveryWorker {
  readonly workerId: string;
  private readonly now: () => Date;
  private readonly tuning: WorkerTuning;
  private readonly lanes = new Map<string, Promise<void>>();
  /** Lanes that have ended and are giving their shop's lease back. */
  private readonly releasing = new Set<Promise<void>>();
  /** Messages in this process's hands (claimed, sending or recording): the sweeper leaves them alone. */
  private readonly inHand = new Set<number>();
  /** The pass, its sleep and its failures' growing waits. */
  private readonly loop: BackgroundLoop;
  /** What a lane needs, built once, and what it may ask of the worker. */
  private readonly parts: LaneDeps;
  private readonly host: LaneHost;
  /** The shops' connections and pacing, as lanes begin. */
  private readonly contexts: ShopContexts;
  /** What deliveries tell of the connection: the last delivery, the last error, a refused key. */
  private readonly health: ConnectionHealth;
  /** Sends and expiries per shop, hour and event, written in batches. */
  private readonly usage: UsageStats;
  private readonly maintenance: Maintenance;
  /** Whether the last pass filled every free lane (more shops may be due than lanes). */
  private saturated = false;
  /** When the sleeping loop means to look again (epoch ms). */
  private plannedWake = 0;
  /** Queries made by the discovery loop, for tests that check idle cost. */
  discoveries = 0;
  /** A lane that fails keeps its shop away for a growing while; other shops are not touched. */
  private readonly shopBackoff: Backoff<string>;
  private readonly logOnce: LogOnce;
  private readonly failures: LoopFailures;

  constructor(private readonly deps: WorkerDeps) {
    this.workerId = deps.workerId ?? `w-${randomUUID().slice(0, 8)}`;
    this.now = deps.now ?? (() => new Date());
    this.tuning = resolveTuning(deps.tuning);
    const clock = () => this.now().getTime();
    this.shopBackoff = new Backoff(SHOP_BACKOFF, clock, deps.random);
    this.logOnce = new LogOnce(deps.logger, undefined, clock);
    this.failures = new LoopFailures(this.logOnce, deps.metrics.loopFailures);
    this.usage = new UsageStats(deps.db, {
      onError: (err) =>
        this.logOnce.log(
          'warn',
          'usage-stats',
          { err: err.message },
          'could not write the counts of sends per event; tried again at the next flush',
        ),
    });
    this.contexts = new ShopContexts(deps, this.logOnce, this.now);
    this.health = new ConnectionHealth(new ConnectionStore(deps.db), deps.logger);
    const { classes } = this.tuning;
    this.parts = {
      repo: deps.repo,
      queue: deps.queue,
      client: deps.client,
      pacer: deps.pacer,
      logger: deps.logger,
      metrics: deps.metrics,
      now: this.now,
      random: deps.random,
      onScrubbed: deps.onScrubbed,
      requestTimeoutMs: deps.requestTimeoutMs,
      tuning: this.tuning,
      recordRetryMs: this.tuning.recordRetryMs,
      floors: floorsOf(classes),
      maxAgeMs: DELIVERY_CLASSES.map((c) => classes.maxAgeMs[c]),
      contexts: this.contexts,
      health: this.health,
      usage: this.usage,
    };
    this.host = {
      workerId: this.workerId,
      inHand: this.inHand,
      stopping: () => this.loop.stopped,
      crowded: () => this.lanes.size >= this.tuning.lanes,
    };
    this.maintenance = new Maintenance(this.parts, this.inHand);
    // the pass's own failures (the database away): growing waits that no wake-up shortens
    this.loop = new BackgroundLoop({
      pass: () => this.pass(),
      onFailure: (err, retryInMs) =>
        this.failures.report('worker_pass', err, 'worker pass failed; retrying after a growing wait', { retryInMs }),
      random: deps.random,
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Finishes in-flight sends, gives unsent claims back, and returns when every lane is done. */
  async stop(): Promise<void> {
    await this.loop.stop();
    await Promise.all([...this.lanes.values()]);
    await Promise.all([...this.releasing]);
    await this.health.flush();
    await this.usage.flush();
  }

  /** New due work somewhere (a wake-up): look now instead of at the next timer. */
  nudge(): void {
    this.loop.wake();
  }

  get activeLanes(): number {
    return this.lanes.size;
  }

  /**
   * One pass: housekeeping, then lease due shops for the free lanes and start them. Returns how
   * long to sleep: until the next due time, the sweep or the safety poll, whichever comes first.
   */
  private async pass(): Promise<number> {
    const { queue } = this.deps;
    await this.maintenance.run();
    const free = this.tuning.lanes - this.lanes.size;
    this.discoveries++;
    // one moment for both questions: with two, a shop due between a lease that asked "due by
    // now?" a moment too early (a timer can fire a millisecond early) and a look for the next
    // due time asked a moment later would be neither, and wait a whole sweep interval
    const now = this.now();
    const shops = await queue.lease<ContextRow & { shopId: string }>(this.workerId, free, now, this.tuning.leaseMs, LEASE_CONTEXT);
    this.saturated = shops.length >= free;
    for (const { shopId, row } of shops) this.startLane(shopId, row);
    // all lanes busy: a finishing lane wakes us; otherwise sleep until the next due time
    let wakeAt: number | null = null;
    if (shops.length < free) {
      const next = await queue.nextWake(now);
      wakeAt = next ? next.getTime() : null;
    }
    const { safetyPollMs, sweepEveryMs } = this.tuning;
    const wait = Math.min(safetyPollMs, sweepEveryMs, wakeAt === null || Number.isNaN(wakeAt) ? Infinity : wakeAt - this.now().getTime());
    this.plannedWake = this.now().getTime() + Math.max(0, wait);
    return wait;
  }

  /** Starts a lane for a leased shop; `context` is its row as the lease read it, if it did. */
  private startLane(shopId: string, context?: ContextRow): void {
    if (this.lanes.has(shopId)) return;
    const lane = runLane(this.parts, this.host, shopId, context).then(
      (end) => {
        if (this.shopBackoff.failures(shopId) > 0) {
          this.shopBackoff.succeed(shopId);
          this.logOnce.clear(`lane:${shopId}`);
        }
        return end;
      },
      (err: unknown) => {
        // the shop comes round again after a growing, jittered wait, in every process (its due
        // time moves): a lane that fails at once can never be leased again at once
        const delay = this.shopBackoff.fail(shopId);
        this.failures.report('lane', err, 'delivery lane failed; the shop is served again after a wait', {
          key: `lane:${shopId}`,
          fields: { shopId },
          retryInMs: delay,
        });
        const end: LaneEnd = { kind: 'end', notBefore: new Date(this.now().getTime() + delay) };
        return end;
      },
    );
    this.lanes.set(
      shopId,
      lane.then(() => undefined),
    );
    // Off the list of running lanes before the lease is given back: a pass that leases the shop
    // again once it is released must find no lane running and start one (finding this one still
    // listed, it would start none and leave the shop leased and idle until the lease expired).
    const released = lane
      .then((end) => {
        this.lanes.delete(shopId);
        return this.deps.queue.release(shopId, this.workerId, end.notBefore);
      })
      .catch((err: unknown) => {
        this.deps.logger.warn({ shopId, err: (err as Error).message }, 'could not release a shop; its lease expires on its own');
        return new Date(0);
      })
      .then((dueAt) => {
        // look again only when it can matter: shops may be waiting for this lane, the shop is
        // due before the loop means to wake, or the loop is mid-pass and cannot tell
        if (this.saturated || !this.loop.sleeping || (dueAt !== null && dueAt.getTime() < this.plannedWake)) this.nudge();
      });
    this.releasing.add(released);
    void released.finally(() => this.releasing.delete(released));
  }
}
