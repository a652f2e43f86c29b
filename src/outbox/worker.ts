// The delivery worker. Each shop with due messages gets a lane: claim a batch (live lane first),
// reserve that many slots from the workspace's shared pacer, send each at its slot, and record
// the classified outcome. Lanes run side by side, so one busy shop never starves another.
import { randomUUID } from 'node:crypto';
import type { OutboxMessage } from '@prisma/client';
import type { Db } from '../db/client';
import type { SecretBox } from '../crypto/secret-box';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import type { SendEventBody, ServiceClient, ServiceResult } from '../service/types';
import type { Pacer } from './pacer';
import type { AttemptRecord, HeldReason, OutboxRepository } from './repository';
import { decideRetry } from './retry-policy';

export interface WorkerDeps {
  db: Db;
  repo: OutboxRepository;
  pacer: Pacer;
  client: ServiceClient;
  secrets: SecretBox;
  metrics: Metrics;
  logger: Logger;
  now?: () => Date;
  random?: () => number;
  workerId?: string;
  /** How often to look for shops with due work when nothing nudges the worker. */
  pollMs?: number;
  /** Most messages claimed at once per shop; the batch is also capped at one second of the limit. */
  batchSize?: number;
  /** Request timeout, used to size claim locks. */
  requestTimeoutMs?: number;
  sweepEveryMs?: number;
}

interface ShopContext {
  workspaceId: string;
  apiKey: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

export class DeliveryWorker {
  readonly workerId: string;
  private readonly now: () => Date;
  private readonly lanes = new Map<string, Promise<void>>();
  private stopping = false;
  private loop?: Promise<void>;
  private wake?: () => void;
  private lastSweep = 0;
  private readonly keyCache = new Map<string, { enc: string; key: string }>();

  constructor(private readonly deps: WorkerDeps) {
    this.workerId = deps.workerId ?? `w-${randomUUID().slice(0, 8)}`;
    this.now = deps.now ?? (() => new Date());
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.loop = this.run();
  }

  /** Finishes in-flight sends, gives unsent claims back, and returns when every lane is done. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
    await Promise.all([...this.lanes.values()]);
    this.loop = undefined;
  }

  /** Starts a shop's lane at once (called after intake), instead of waiting for the next poll. */
  nudge(shopId: string): void {
    if (!this.stopping && this.loop) this.startLane(shopId);
  }

  get activeLanes(): number {
    return this.lanes.size;
  }

  private async run(): Promise<void> {
    const { logger } = this.deps;
    while (!this.stopping) {
      try {
        const now = this.now().getTime();
        if (now - this.lastSweep >= (this.deps.sweepEveryMs ?? 5_000)) {
          this.lastSweep = now;
          const released = await this.deps.repo.sweepExpiredLocks(this.now());
          if (released) logger.warn({ released }, 'released messages locked by a process that stopped');
        }
        for (const shopId of await this.deps.repo.shopsWithQueuedWork()) this.startLane(shopId);
      } catch (err) {
        logger.error({ err: (err as Error).message }, 'worker poll failed; retrying');
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, this.deps.pollMs ?? 250);
      });
    }
  }

  private startLane(shopId: string): void {
    if (this.lanes.has(shopId)) return;
    const lane = this.runLane(shopId)
      .catch((err: unknown) => this.deps.logger.error({ shopId, err: (err as Error).message }, 'delivery lane failed; it will restart on the next poll'))
      .finally(() => this.lanes.delete(shopId));
    this.lanes.set(shopId, lane);
  }

  /** The shop's connection, or the reason its messages must wait. */
  private async context(shopId: string): Promise<ShopContext | { hold: HeldReason } | null> {
    const shop = await this.deps.db.shop.findUnique({ where: { id: shopId }, include: { connection: true } });
    if (!shop) return null;
    if (shop.uninstalledAt) return { hold: 'uninstalled' };
    const c = shop.connection;
    if (!c) return { hold: 'disconnected' };
    if (c.status !== 'connected') return { hold: 'invalid_key' };
    let cached = this.keyCache.get(shopId);
    if (!cached || cached.enc !== c.apiKeyEnc) {
      cached = { enc: c.apiKeyEnc, key: this.deps.secrets.decrypt(c.apiKeyEnc, shopId) };
      this.keyCache.set(shopId, cached);
    }
    return { workspaceId: c.workspaceId, apiKey: cached.key };
  }

  /**
   * A shop's lane. Batches are pipelined: the next batch is claimed as soon as the current one
   * has been dispatched, so the schedule has no gap while the last requests are in flight.
   */
  private async runLane(shopId: string): Promise<void> {
    const { repo, pacer } = this.deps;
    const inFlight = new Set<Promise<unknown>>();
    let stopLane = false;
    try {
      while (!this.stopping && !stopLane) {
        const ctx = await this.context(shopId);
        if (!ctx) return;
        if ('hold' in ctx) {
          await repo.holdShop(shopId, ctx.hold);
          return;
        }
        const { limit, pausedUntil } = await pacer.state(ctx.workspaceId);
        if (pausedUntil) return;
        // a quarter second of the limit per claim: a live event never waits behind much history
        const batchSize = Math.max(1, Math.min(this.deps.batchSize ?? 50, Math.ceil(limit / 4)));
        // never more than about two seconds of requests outstanding
        while (inFlight.size > 2 * limit) await Promise.race(inFlight);
        const lockMs = Math.ceil(((batchSize + 1) * 1000) / limit) + (this.deps.requestTimeoutMs ?? 10_000) + 5_000;
        const batch = await repo.claim(shopId, this.workerId, batchSize, this.now(), lockMs);
        if (batch.length === 0) return;
        let { slots } = await pacer.reserve(ctx.workspaceId, batch.length);
        let i = 0;
        for (let j = 0; i < batch.length; i++, j++) {
          // A slot missed by more than the tolerance (a busy event loop) is given up, never
          // used late: overdue slots fired back to back would burst past the limit.
          if (this.now().getTime() - slots[j]! > pacer.lateToleranceMs) {
            ({ slots } = await pacer.reserve(ctx.workspaceId, batch.length - i));
            j = 0;
          }
          const wait = slots[j]! - this.now().getTime();
          if (wait > 0) await sleep(wait);
          if (this.stopping || stopLane) break;
          const p = this.deliver(batch[i]!, ctx, shopId)
            .then((r) => {
              if (r === 'stop') stopLane = true;
            })
            .catch((err: unknown) => this.deps.logger.error({ shopId, err: (err as Error).message }, 'recording a delivery failed; its lock will expire and it will be retried'))
            .finally(() => inFlight.delete(p));
          inFlight.add(p);
        }
        // claimed but not sent (stopping, or the workspace got blocked): give them back untouched
        await repo.release(batch.slice(i).map((m) => m.id), this.workerId);
      }
    } finally {
      await Promise.all(inFlight);
    }
  }

  /**
   * The connection's "last successful delivery", written at most once a second per shop. A
   * success also clears the last error, so the page does not show a problem that is over.
   */
  private readonly lastDelivered = new Map<string, number>();
  private noteDelivered(shopId: string, at: Date): void {
    const prev = this.lastDelivered.get(shopId) ?? 0;
    if (at.getTime() - prev < 1000) return;
    this.lastDelivered.set(shopId, at.getTime());
    this.deps.db.connection
      .updateMany({ where: { shopId }, data: { lastDeliveredAt: at, lastError: null, lastErrorAt: null } })
      .catch((err: unknown) => this.deps.logger.warn({ shopId, err: (err as Error).message }, 'could not record the last delivery time'));
  }

  private async deliver(msg: OutboxMessage, ctx: ShopContext, shopId: string): Promise<'continue' | 'stop'> {
    const { client, repo, pacer, metrics, logger, db } = this.deps;
    const startedAt = this.now();
    let result: ServiceResult<unknown>;
    if (msg.kind === 'contact_delete') {
      result = await client.deleteContact(ctx.apiKey, msg.email ?? '');
    } else {
      const body = JSON.parse(msg.body) as SendEventBody;
      result = await client.sendEvent(ctx.apiKey, body);
    }
    pacer.noteSend(ctx.workspaceId, startedAt.getTime());
    const finishedAt = this.now();
    const attempt: AttemptRecord = {
      attempt: msg.attempts,
      startedAt,
      durationMs: Math.max(0, Math.round(result.durationMs)),
      statusCode: result.status ?? null,
      outcome: result.kind,
      error: result.kind === 'ok' ? null : result.message,
      workerId: this.workerId,
    };
    metrics.deliveries.inc({ outcome: result.kind });
    if (result.kind === 'rate_limited') metrics.rateLimited.inc();
    await pacer.observe(ctx.workspaceId, result.rate, result.kind === 'rate_limited', result.kind === 'ok' ? undefined : result.retryAfterMs);

    const scrub = msg.kind === 'contact_delete';
    if (result.kind === 'ok') {
      await repo.markDelivered(msg, this.workerId, finishedAt, attempt, scrub);
      // live events only: an import's backlog is not latency
      if (msg.lane === 0) metrics.deliveryLatency.observe(Math.max(0, finishedAt.getTime() - msg.dueAt.getTime()) / 1000);
      this.noteDelivered(shopId, finishedAt);
      return 'continue';
    }
    if (result.kind === 'not_acceptable') logger.error({ messageId: msg.id }, 'the service answered 406 Not Acceptable: our request headers are wrong (a bug)');
    const decision = decideRetry(result, msg.attempts, msg.dueAt, finishedAt, this.deps.random);
    await db.connection.updateMany({ where: { shopId }, data: { lastError: result.message, lastErrorAt: finishedAt } });
    switch (decision.action) {
      case 'retry':
        await repo.reschedule(msg, this.workerId, decision.runAt, decision.reason, attempt);
        return 'continue';
      case 'dead':
        logger.warn({ messageId: msg.id, shopId, reason: decision.reason }, 'delivery is dead');
        await repo.markDead(msg, this.workerId, decision.reason, attempt, scrub);
        return 'continue';
      case 'hold':
        logger.warn({ shopId }, 'the service refused the API key; holding the shop’s deliveries until a valid key is saved');
        await db.connection.updateMany({ where: { shopId }, data: { status: 'invalid_key' } });
        await repo.markHeld(msg, this.workerId, 'invalid_key', result.message, attempt);
        await repo.holdShop(shopId, 'invalid_key');
        return 'stop';
      case 'pause_workspace':
        logger.warn({ workspaceId: ctx.workspaceId, until: decision.until.toISOString() }, 'the service blocked the workspace; pausing its deliveries');
        await pacer.pause(ctx.workspaceId, decision.until, decision.reason);
        await repo.reschedule(msg, this.workerId, decision.runAt, decision.reason, attempt);
        return 'stop';
    }
  }
}
