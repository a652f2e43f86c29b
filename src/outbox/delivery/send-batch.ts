// A claimed batch, sent at the workspace's pace. Each send takes its turn from the shared pacer
// (pacer.ts) at the moment it leaves, with at most maxInFlight requests out; the next turn is
// taken once the request was written, and spaced from when it really left. What was claimed but
// not sent (stopping, a slow-down, a failure) goes back to the queue untouched.
import type { ShopQueue } from '../due';
import type { ClaimedMessage } from '../message';
import { deliver, type DeliverDeps, type LaneStep } from './deliver';
import type { ReadyShop } from './shop-context';
import type { WorkerTuning } from './tuning';

export interface SendBatchDeps extends DeliverDeps {
  queue: ShopQueue;
  tuning: Pick<WorkerTuning, 'leaseMs' | 'maxSendWaitMs' | 'maxInFlight'>;
}

/** What a lane's batches need of the worker. */
export interface BatchHost {
  readonly workerId: string;
  /** Whether the worker is stopping: no further send leaves. */
  stopping(): boolean;
  /** Messages in this process's hands (claimed, sending or recording): the sweeper leaves them alone. */
  readonly inHand: Set<number>;
}

/** A lane at work on its shop: its requests in flight, and whether it must end once they are answered. */
export interface LaneRun {
  shopId: string;
  ctx: ReadyShop;
  inFlight: Set<Promise<unknown>>;
  stop: boolean;
}

/** Sends a claimed batch at the workspace's pace; says whether the lane goes on, or why it ends. */
export async function sendBatch(
  deps: SendBatchDeps,
  host: BatchHost,
  run: LaneRun,
  batch: ClaimedMessage[],
  renew: boolean,
): Promise<LaneStep> {
  const { repo, pacer, queue } = deps;
  const { shopId, ctx, inFlight } = run;
  for (const m of batch) host.inHand.add(m.id);
  let i = 0;
  try {
    // the lease was taken with the lane; later batches extend it
    if (renew) await queue.renew(shopId, host.workerId, new Date(deps.now().getTime() + deps.tuning.leaseMs));
    for (; i < batch.length; i++) {
      // no room for another request for long: the rest goes back, as for a slowed-down workspace
      if (!(await roomInFlight(deps, host, inFlight))) return { kind: 'end' };
      // a workspace slowed down for long (a 429, someone else's traffic) gives its batch back
      // and its shop comes round again then: no message waits claimed for long
      const took = await pacer.takeSend(ctx.workspaceId, {
        shouldStop: () => host.stopping() || run.stop,
        maxWaitMs: deps.tuning.maxSendWaitMs,
        cls: batch[i]!.deliveryClass,
      });
      if (took.kind === 'paused') return { kind: 'end', notBefore: took.until };
      if (took.kind === 'busy') return { kind: 'end', notBefore: new Date(took.until) };
      if (took.kind === 'stopped') break;
      const msg = batch[i]!;
      let wroteAt: number | undefined;
      let written = () => {};
      const left = new Promise<void>((resolve) => (written = resolve));
      const p = deliver(deps, host.workerId, msg, ctx, shopId, (at) => {
        wroteAt ??= at;
        written();
      })
        .then((r) => {
          if (r.kind === 'end') run.stop = true;
        })
        .catch((err: unknown) =>
          deps.logger.error(
            { shopId, messageId: msg.id, err: (err as Error).message },
            'a delivery failed unexpectedly; its lock will expire',
          ),
        )
        .finally(() => {
          inFlight.delete(p);
          host.inHand.delete(msg.id);
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
            deps.logger.warn({ shopId, err: (err as Error).message }, 'could not space the next send from a late one'),
          );
    }
  } finally {
    // claimed but not sent (stopping, a slow-down, or this lane failed): given back untouched;
    // if even that fails, they are no longer in this process's hands, so the sweeper releases
    // them once their lock expires
    const unsent = batch.slice(i).map((m) => m.id);
    for (const id of unsent) host.inHand.delete(id);
    await repo
      .release(unsent, host.workerId)
      .catch((err: unknown) =>
        deps.logger.warn({ shopId, err: (err as Error).message }, 'could not give back unsent claims; their locks expire'),
      );
  }
  if (!run.stop) return { kind: 'continue' };
  // the shop comes round again when its workspace can take a send (after a pause, a 429)
  const free = await pacer.nextFree(ctx.workspaceId);
  return free > deps.now().getTime() ? { kind: 'end', notBefore: new Date(free) } : { kind: 'end' };
}

/** Waits until the lane has fewer than maxInFlight requests out; false if that took too long. */
async function roomInFlight(deps: SendBatchDeps, host: BatchHost, inFlight: Set<Promise<unknown>>): Promise<boolean> {
  const max = deps.tuning.maxInFlight;
  if (inFlight.size < max) return true;
  const deadline = Date.now() + deps.tuning.maxSendWaitMs;
  while (inFlight.size >= max) {
    const left = deadline - Date.now();
    if (left <= 0 || host.stopping()) return false;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([...inFlight, new Promise<void>((r) => (timer = setTimeout(r, left)))]);
    clearTimeout(timer);
  }
  return true;
}
