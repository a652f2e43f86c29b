// A shop's lane: plan a batch by delivery class, claim it, take each send from the pacer as it
// leaves (send-batch.ts), repeat until the shop has nothing due, the workspace is slowed down or
// paused, the workspace's next send belongs to another shop's class, or the lane has had its turn
// while others wait. Claimed messages past their class's useful age are expired on the way, never
// sent. A lane knows of the worker only its LaneHost.
import { pause } from '../../lib/backoff';
import { DELIVERY_CLASSES, type ClassIndex } from '../classes';
import type { ClaimedMessage } from '../message';
import { batchSizeFor, inPlanOrder, lockMsFor, planBatch, tookAll } from './batch-plan';
import type { LaneEnd } from './deliver';
import { sendBatch, type BatchHost, type LaneRun, type SendBatchDeps } from './send-batch';
import type { ContextRow, ShopContexts } from './shop-context';
import type { WorkerTuning } from './tuning';

export interface LaneDeps extends SendBatchDeps {
  contexts: ShopContexts;
  tuning: WorkerTuning;
  /** The service client's request timeout: it sizes claim locks. */
  requestTimeoutMs: number;
  /** Floor shares by class index, and maximum useful ages (ms, null: none). */
  floors: readonly number[];
  maxAgeMs: ReadonlyArray<number | null>;
}

/** What a lane needs of the worker. */
export interface LaneHost extends BatchHost {
  /** Whether every lane is busy: other shops may be waiting for one. */
  crowded(): boolean;
}

/** Runs the lane of a leased shop; `leased` is its context row as the lease read it, if it did. */
export async function runLane(deps: LaneDeps, host: LaneHost, shopId: string, leased?: ContextRow): Promise<LaneEnd> {
  const { repo, pacer } = deps;
  const inFlight = new Set<Promise<unknown>>();
  const started = Date.now();
  /** The workspace's usage when this lane last waited for another shop's send; null when it did not. */
  let waitedAt: string | null = null;
  try {
    const ctx = await deps.contexts.read(shopId, leased);
    if (ctx.kind === 'gone') return { kind: 'end' };
    if (ctx.kind === 'hold') {
      await repo.holdShop(shopId, ctx.reason);
      return { kind: 'end' };
    }
    const run: LaneRun = { shopId, ctx, inFlight, stop: false };
    for (let round = 0; !host.stopping(); round++) {
      const { limit, pausedUntil, usage } = round === 0 ? ctx.pacing : await pacer.state(ctx.workspaceId);
      if (pausedUntil) return { kind: 'end', notBefore: pausedUntil };
      if (Date.now() - started > deps.tuning.laneQuantumMs && host.crowded()) {
        // other shops may be waiting for a lane: go behind them
        return { kind: 'end', notBefore: deps.now() };
      }
      const batchSize = batchSizeFor(limit, deps.tuning.batchSize);
      const now = deps.now();
      const due = await repo.dueByClass(shopId, ctx.workspaceId, now, batchSize);
      if (due.own.every((n) => n === 0)) return { kind: 'end' };
      let counts = planBatch(due, usage, deps.floors, batchSize, true);
      if (counts.every((n) => n === 0)) {
        // the workspace's next send is another shop's (a higher class, or a floor): its lane takes
        // it. When no one has sent since this lane last waited (that shop is not being served),
        // this shop sends one of its own instead, and plans again: the budget is never left
        // unused, and a slow lane elsewhere costs the plan one send, not a batch.
        const spent = usage.join(',');
        if (waitedAt !== spent) {
          waitedAt = spent;
          await pause(Math.max(50, 2 * pacer.intervalMs(limit)));
          continue;
        }
        counts = planBatch(due, usage, deps.floors, 1, false);
      }
      waitedAt = null;
      const lockMs = lockMsFor(batchSize, limit, deps.requestTimeoutMs);
      const claimed = await repo.claim(shopId, host.workerId, counts, now, lockMs);
      if (claimed.length === 0) return { kind: 'end' };
      const batch = await withoutExpired(deps, host, shopId, claimed, now);
      if (batch.length) {
        const step = await sendBatch(deps, host, run, inPlanOrder(batch, usage, deps.floors), round > 0);
        if (step.kind === 'end') return step;
      }
      // the batch was all the shop had due (each class's count under the cap, every one
      // claimed), or a short claim took everything: the release finds what was queued meanwhile,
      // so the common lane of one or two messages reads nothing more
      const planned = counts.reduce((a, b) => a + b, 0);
      if (claimed.length < planned || tookAll(due, counts, batchSize)) return { kind: 'end' };
    }
    return { kind: 'end' };
  } finally {
    await Promise.all(inFlight);
  }
}

/**
 * Claimed messages past their class's useful age are expired, never sent; when one is, the
 * shop's whole stale backlog of that class goes with it (it is oldest due first).
 */
async function withoutExpired(
  deps: LaneDeps,
  host: LaneHost,
  shopId: string,
  claimed: ClaimedMessage[],
  now: Date,
): Promise<ClaimedMessage[]> {
  const stale = claimed.filter((m) => {
    const maxAge = deps.maxAgeMs[m.deliveryClass];
    return maxAge !== null && maxAge !== undefined && now.getTime() - m.dueAt.getTime() > maxAge;
  });
  if (stale.length === 0) return claimed;
  const { repo, metrics } = deps;
  for (const k of new Set(stale.map((m) => m.deliveryClass))) {
    const maxAge = deps.maxAgeMs[k]!;
    const reason = expiredReason(k, maxAge);
    const mine = stale.filter((m) => m.deliveryClass === k);
    const expired = new Map<string, number>();
    if (
      (await repo.expireClaimed(
        mine.map((m) => m.id),
        host.workerId,
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
      deps.usage.add(shopId, name, k, now, { expired: n });
    }
  }
  return claimed.filter((m) => !stale.includes(m));
}

/** Why a message was expired unsent, for the delivery log. */
function expiredReason(k: ClassIndex, maxAgeMs: number): string {
  const hours = Math.round((maxAgeMs / 3_600_000) * 10) / 10;
  return `expired unsent: a ${DELIVERY_CLASSES[k]} event is no longer useful ${hours} h after it was due (the workspace's budget went to more important events first)`;
}
