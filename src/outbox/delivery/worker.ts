// The delivery worker. It finds shops with DUE work through the queue of queues (due.ts),
// oldest due first, and runs a bounded number of lanes, one shop each. A lane claims a batch
// (live lane first), takes each send from the workspace's shared pacer at the moment it leaves,
// and records the classified outcome. Between passes the worker sleeps until the earliest
// future due time, a wake-up (in-process or NOTIFY), or the slow safety poll: a shop whose
// messages all lie in the future costs nothing.
import { randomUUID } from 'node:crypto';
import { Backoff, LOOP_BACKOFF, SHOP_BACKOFF } from '../../lib/backoff';
import { LoopSleep } from '../../lib/loop-sleep';
import type { Logger } from '../../observability/logger';
import { LogOnce, LoopFailures } from '../../observability/log-once';
import type { ServiceClient } from '../../integrations/service/types';
import { ConnectionStore } from '../connection-store';
import type { ShopQueue } from '../due';
import { DELIVERY_CLASSES, floorsOf, type ClassIndex } from '../classes';
import type { ClaimedMessage } from '../message';
import type { OutboxRepository } from '../repository';
import { batchSizeFor, inPlanOrder, lockMsFor, planBatch, tookAll } from './batch-plan';
import { ConnectionHealth } from './connection-health';
import { deliver, type DeliverDeps } from './deliver';
import { resolveTuning, type WorkerTuning } from './tuning';
import { LEASE_CONTEXT, ShopContexts, type ContextRow, type ShopContext, type ShopContextDeps } from './shop-context';
import { UsageStats } from '../usage-stats';

export interface WorkerDeps extends ShopContextDeps {
  repo: OutboxRepository;
  queue: ShopQueue;
  client: ServiceClient;
  logger: Logger;
  now?: () => Date;
  random?: () => number;
  workerId?: string;
  /** The service client's request timeout: it sizes claim locks. */
  requestTimeoutMs: number;
  onScrubbed?: () => void;
  /** What differs from DEFAULT_TUNING. */
  tuning?: Partial<WorkerTuning>;
}

/** Why a message was expired unsent, for the delivery log. */
function expiredReason(k: ClassIndex, maxAgeMs: number): string {
  const hours = Math.round((maxAgeMs / 3_600_000) * 10) / 10;
  return `expired unsent: a ${DELIVERY_CLASSES[k]} event is no longer useful ${hours} h after it was due (the workspace's budget went to more important events first)`;
}

type LaneEnd = { notBefore?: Date };

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

export class DeliveryWorker {
  readonly workerId: string;
  private readonly now: () => Date;
  private readonly lanes = new Map<string, Promise<void>>();
  /** Lanes that have ended and are giving their shop's lease back. */
  private readonly releasing = new Set<Promise<void>>();
  /** Messages this process holds (claimed, sending or recording): the sweeper leaves them alone. */
  private readonly inHand = new Set<number>();
  private stopping = false;
  private loop?: Promise<void>;
  private readonly sleeper = new LoopSleep();
  private woken = false;
  private lastSweep = 0;
  private lastReconcile = 0;
  /** The shops' connections and pacing, as lanes begin. */
  private readonly contexts: ShopContexts;
  /** What deliveries tell of the connection: the last delivery, the last error, a refused key. */
  private readonly health: ConnectionHealth;
  /** What a delivery needs, built once. */
  private readonly parts: DeliverDeps;
  /** Whether the last pass filled every free lane (more shops may be due than lanes). */
  private saturated = false;
  /** When the sleeping loop means to look again (epoch ms). */
  private plannedWake = 0;
  /** Queries made by the discovery loop, for tests that check idle cost. */
  discoveries = 0;
  /** A lane that fails keeps its shop away for a growing while; other shops are not touched. */
  private readonly shopBackoff: Backoff<string>;
  /** The discovery loop's own failures (the database away): growing waits, never a spin. */
  private readonly loopBackoff: Backoff<string>;
  private readonly logOnce: LogOnce;
  private readonly failures: LoopFailures;
  private readonly tuning: WorkerTuning;
  /** Floor shares by class index, and maximum useful ages (ms, null: none). */
  private readonly floors: number[];
  private readonly maxAgeMs: Array<number | null>;
  /** Sends and expiries per shop, hour and event, written in batches. */
  private readonly usageStats: UsageStats;
  private lastUsagePrune = 0;

  constructor(private readonly deps: WorkerDeps) {
    this.workerId = deps.workerId ?? `w-${randomUUID().slice(0, 8)}`;
    this.now = deps.now ?? (() => new Date());
    this.lastReconcile = Date.now();
    const clock = () => this.now().getTime();
    this.shopBackoff = new Backoff(SHOP_BACKOFF, clock, deps.random);
    this.loopBackoff = new Backoff(LOOP_BACKOFF, clock, deps.random);
    this.tuning = resolveTuning(deps.tuning);
    this.logOnce = new LogOnce(deps.logger, undefined, clock);
    this.failures = new LoopFailures(this.logOnce, deps.metrics.loopFailures);
    const policy = this.tuning.classes;
    this.floors = floorsOf(policy);
    this.maxAgeMs = DELIVERY_CLASSES.map((c) => policy.maxAgeMs[c]);
    this.usageStats = new UsageStats(deps.db, {
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
    this.parts = {
      repo: deps.repo,
      logger: deps.logger,
      metrics: deps.metrics,
      now: this.now,
      recordRetryMs: this.tuning.recordRetryMs,
      client: deps.client,
      pacer: deps.pacer,
      health: this.health,
      usage: this.usageStats,
      random: deps.random,
      onScrubbed: deps.onScrubbed,
    };
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.loop = this.run();
  }

  /** Finishes in-flight sends, gives unsent claims back, and returns when every lane is done. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.sleeper.interrupt();
    await this.loop;
    await Promise.all([...this.lanes.values()]);
    await Promise.all([...this.releasing]);
    await this.health.flush();
    await this.usageStats.flush();
    this.loop = undefined;
  }

  /** New due work somewhere (a wake-up): look now instead of at the next timer. */
  nudge(): void {
    this.woken = true;
    this.sleeper.wake();
  }

  get activeLanes(): number {
    return this.lanes.size;
  }

  private async run(): Promise<void> {
    const { queue } = this.deps;
    while (!this.stopping) {
      let wakeAt: number | null = null;
      try {
        this.woken = false;
        await this.housekeeping();
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
        if (shops.length < free) {
          const next = await queue.nextWake(now);
          wakeAt = next ? next.getTime() : null;
        }
        this.loopBackoff.succeed('pass');
      } catch (err) {
        const delay = this.loopBackoff.fail('pass');
        this.failures.report('worker_pass', err, 'worker pass failed; retrying after a growing wait', { retryInMs: delay });
        // the whole wait: neither a wake-up nor the sweep interval brings a failing pass back sooner
        await this.sleeper.sleep(delay, false);
        continue;
      }
      if (this.stopping || this.woken) continue;
      const { safetyPollMs, sweepEveryMs } = this.tuning;
      const wait = Math.min(safetyPollMs, sweepEveryMs, wakeAt === null || Number.isNaN(wakeAt) ? Infinity : wakeAt - this.now().getTime());
      this.plannedWake = this.now().getTime() + Math.max(0, wait);
      await this.sleeper.sleep(wait);
    }
  }

  /** Expired locks of stopped processes go back to the queue; now and then, the safety reconcile. */
  private async housekeeping(): Promise<void> {
    const { repo, queue, logger } = this.deps;
    const now = Date.now();
    if (now - this.lastSweep >= this.tuning.sweepEveryMs) {
      this.lastSweep = now;
      const requeued = await repo.sweepExpiredLocks(this.now(), [...this.inHand]);
      if (requeued.length) {
        logger.warn({ released: requeued.length }, 'released messages locked by a process that stopped');
        await queue.lower(requeued);
      }
    }
    if (now - this.lastUsagePrune >= 3_600_000) {
      this.lastUsagePrune = now;
      await this.usageStats.prune(this.now());
    }
    if (now - this.lastReconcile >= this.tuning.reconcileEveryMs) {
      this.lastReconcile = now;
      const missed = await queue.reconcile();
      if (missed.length)
        logger.warn(
          { shops: missed.length, sample: missed.slice(0, 5) },
          'queued work that was not indexed as due was found by the safety reconcile',
        );
    }
  }

  /** Starts a lane for a leased shop; `context` is its row as the lease read it, if it did. */
  private startLane(shopId: string, context?: ContextRow): void {
    if (this.lanes.has(shopId)) return;
    const lane = this.runLane(shopId, context).then(
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
        return { notBefore: new Date(this.now().getTime() + delay) } as LaneEnd;
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
        if (this.saturated || !this.sleeper.sleeping || (dueAt !== null && dueAt.getTime() < this.plannedWake)) this.nudge();
      });
    this.releasing.add(released);
    void released.finally(() => this.releasing.delete(released));
  }

  /**
   * A shop's lane: plan a batch by delivery class, claim it, take each send from the pacer as it
   * leaves, repeat until the shop has nothing due, the workspace is slowed down or paused, the
   * workspace's next send belongs to another shop's class, or the lane has had its turn while
   * others wait.
   */
  private async runLane(shopId: string, leased?: ContextRow): Promise<LaneEnd> {
    const { repo, pacer } = this.deps;
    const inFlight = new Set<Promise<unknown>>();
    const lane = { stop: false };
    const started = Date.now();
    /** The workspace's usage when this lane last waited for another shop's send; null when it did not. */
    let waitedAt: string | null = null;
    try {
      const ctx = await this.contexts.read(shopId, leased);
      if (!ctx) return {};
      if ('hold' in ctx) {
        await repo.holdShop(shopId, ctx.hold);
        return {};
      }
      for (let round = 0; !this.stopping; round++) {
        const { limit, pausedUntil, usage } = round === 0 ? ctx.pacing : await pacer.state(ctx.workspaceId);
        if (pausedUntil) return { notBefore: pausedUntil };
        if (Date.now() - started > this.tuning.laneQuantumMs && this.lanes.size >= this.tuning.lanes) {
          // other shops may be waiting for a lane: go behind them
          return { notBefore: this.now() };
        }
        const batchSize = batchSizeFor(limit, this.tuning.batchSize);
        const now = this.now();
        const due = await repo.dueByClass(shopId, ctx.workspaceId, now, batchSize);
        if (due.own.every((n) => n === 0)) return {};
        let counts = planBatch(due, usage, this.floors, batchSize, true);
        if (counts.every((n) => n === 0)) {
          // the workspace's next send is another shop's (a higher class, or a floor): its lane takes
          // it. When no one has sent since this lane last waited (that shop is not being served),
          // this shop sends one of its own instead, and plans again: the budget is never left
          // unused, and a slow lane elsewhere costs the plan one send, not a batch.
          const spent = usage.join(',');
          if (waitedAt !== spent) {
            waitedAt = spent;
            await sleep(Math.max(50, 2 * pacer.intervalMs(limit)));
            continue;
          }
          counts = planBatch(due, usage, this.floors, 1, false);
        }
        waitedAt = null;
        const lockMs = lockMsFor(batchSize, limit, this.deps.requestTimeoutMs);
        const claimed = await repo.claim(shopId, this.workerId, counts, now, lockMs);
        if (claimed.length === 0) return {};
        const batch = await this.withoutExpired(shopId, claimed, now);
        const end = batch.length
          ? await this.sendBatch(shopId, ctx, inPlanOrder(batch, usage, this.floors), inFlight, lane, round > 0)
          : null;
        if (end) return end;
        // the batch was all the shop had due (each class's count under the cap, every one
        // claimed), or a short claim took everything: the release finds what was queued meanwhile,
        // so the common lane of one or two messages reads nothing more
        const planned = counts.reduce((a, b) => a + b, 0);
        if (claimed.length < planned || tookAll(due, counts, batchSize)) return {};
      }
      return {};
    } finally {
      await Promise.all(inFlight);
    }
  }

  /**
   * Claimed messages past their class's useful age are expired, never sent; when one is, the
   * shop's whole stale backlog of that class goes with it (it is oldest due first).
   */
  private async withoutExpired(shopId: string, claimed: ClaimedMessage[], now: Date): Promise<ClaimedMessage[]> {
    const stale = claimed.filter((m) => {
      const maxAge = this.maxAgeMs[m.deliveryClass];
      return maxAge !== null && maxAge !== undefined && now.getTime() - m.dueAt.getTime() > maxAge;
    });
    if (stale.length === 0) return claimed;
    const { repo, metrics } = this.deps;
    for (const k of new Set(stale.map((m) => m.deliveryClass))) {
      const maxAge = this.maxAgeMs[k]!;
      const reason = expiredReason(k, maxAge);
      const mine = stale.filter((m) => m.deliveryClass === k);
      const expired = new Map<string, number>();
      if (
        (await repo.expireClaimed(
          mine.map((m) => m.id),
          this.workerId,
          reason,
          now,
        )) > 0
      ) {
        for (const m of mine) expired.set(m.eventName, (expired.get(m.eventName) ?? 0) + 1);
      }
      for (const [name, n] of await repo.expireStale(shopId, k, new Date(now.getTime() - maxAge), now, reason))
        expired.set(name, (expired.get(name) ?? 0) + n);
      for (const [name, n] of expired) {
        metrics.classExpired.inc({ class: DELIVERY_CLASSES[k] }, n);
        this.usageStats.add(shopId, name, k, now, { expired: n });
      }
    }
    return claimed.filter((m) => !stale.includes(m));
  }

  /** Sends a claimed batch at the workspace's pace; says why the lane must end, when it must. */
  private async sendBatch(
    shopId: string,
    ctx: ShopContext,
    batch: ClaimedMessage[],
    inFlight: Set<Promise<unknown>>,
    lane: { stop: boolean },
    renew: boolean,
  ): Promise<LaneEnd | null> {
    const { repo, pacer, queue } = this.deps;
    for (const m of batch) this.inHand.add(m.id);
    let i = 0;
    try {
      // the lease was taken with the lane; later batches extend it
      if (renew) await queue.renew(shopId, this.workerId, new Date(this.now().getTime() + this.tuning.leaseMs));
      for (; i < batch.length; i++) {
        // no room for another request for long: the rest goes back, as for a slowed-down workspace
        if (!(await this.roomInFlight(inFlight))) return {};
        // a workspace slowed down for long (a 429, someone else's traffic) gives its batch back
        // and its shop comes round again then: no message waits claimed for long
        const took = await pacer.takeSend(ctx.workspaceId, {
          shouldStop: () => this.stopping || lane.stop,
          maxWaitMs: this.tuning.maxSendWaitMs,
          cls: batch[i]!.deliveryClass,
        });
        if (took.kind === 'paused') return { notBefore: took.until };
        if (took.kind === 'busy') return { notBefore: new Date(took.until) };
        if (took.kind === 'stopped') break;
        const msg = batch[i]!;
        let wroteAt: number | undefined;
        let written = () => {};
        const left = new Promise<void>((resolve) => (written = resolve));
        const p = deliver(this.parts, this.workerId, msg, ctx, shopId, (at) => {
          wroteAt ??= at;
          written();
        })
          .then((r) => {
            if (r === 'stop') lane.stop = true;
          })
          .catch((err: unknown) =>
            this.deps.logger.error(
              { shopId, messageId: msg.id, err: (err as Error).message },
              'a delivery failed unexpectedly; its lock will expire',
            ),
          )
          .finally(() => {
            inFlight.delete(p);
            this.inHand.delete(msg.id);
          });
        inFlight.add(p);
        // The lane takes its next turn only once this request has left (at once, unless a
        // connection had to be opened first): one that left late moves the workspace's next turn
        // to an interval after it, so the requests after it are not crowded behind it.
        await Promise.race([left, p]);
        if (wroteAt !== undefined)
          await pacer
            .sent(ctx.workspaceId, took, wroteAt)
            .catch((err: unknown) =>
              this.deps.logger.warn({ shopId, err: (err as Error).message }, 'could not space the next send from a late one'),
            );
      }
    } finally {
      // claimed but not sent (stopping, a slow-down, or this lane failed): given back untouched;
      // if even that fails, they are no longer in this process's hands, so the sweeper releases
      // them once their lock expires
      const unsent = batch.slice(i).map((m) => m.id);
      for (const id of unsent) this.inHand.delete(id);
      await repo
        .release(unsent, this.workerId)
        .catch((err: unknown) =>
          this.deps.logger.warn({ shopId, err: (err as Error).message }, 'could not give back unsent claims; their locks expire'),
        );
    }
    if (!lane.stop) return null;
    // the shop comes round again when its workspace can take a send (after a pause, a 429)
    const free = await pacer.nextFree(ctx.workspaceId);
    return free > this.now().getTime() ? { notBefore: new Date(free) } : {};
  }

  /** Waits until the lane has fewer than maxInFlight requests out; false if that took too long. */
  private async roomInFlight(inFlight: Set<Promise<unknown>>): Promise<boolean> {
    const max = this.tuning.maxInFlight;
    if (inFlight.size < max) return true;
    const deadline = Date.now() + this.tuning.maxSendWaitMs;
    while (inFlight.size >= max) {
      const left = deadline - Date.now();
      if (left <= 0 || this.stopping) return false;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([...inFlight, new Promise<void>((r) => (timer = setTimeout(r, left)))]);
      clearTimeout(timer);
    }
    return true;
  }
}
