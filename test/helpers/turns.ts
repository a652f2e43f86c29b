// The turns the pacer hands out in this process, as the pacer itself decides them: when each send
// was allowed to leave (takeSend's `at`, on the pacer's own clock) and when it really left (the
// moment the worker reports to sent(), when later). The limit is a property of these times: no
// more than `limit` of them in any sliding second, whatever the machine's speed. The arrival times
// at a service emulator add that emulator's own event-loop delay, which a busy machine stretches
// and bunches; they show the machine, not the pacer.
import type { Db } from '../../src/db/client';
import { Pacer, type TakeSend } from '../../src/outbox/pacer';

export interface Turn {
  workspaceId: string;
  /** When the pacer let the send leave (epoch ms, its clock). */
  at: number;
  /** When the request left: the time the worker reported to sent() if later than `at`, else `at`. */
  leftAt: number;
  /** The delivery class the turn was taken for (undefined: not a delivery). */
  cls?: number;
  /** The workspace's limit the pacer spaced this turn by. */
  limit: number;
}

export interface TurnRecorder {
  /** Every turn taken in this process since the recorder started, in the order taken. */
  all(): Turn[];
  /** The times the requests of `workspaceId` left, in the order taken. */
  departures(workspaceId: string): number[];
  restore(): void;
}

/** Records every turn the pacers of this process hand out, until restore(). */
export function recordTurns(): TurnRecorder {
  const turns: Turn[] = [];
  const byToken = new Map<string, Turn>();
  const limits = new Map<string, number>();
  const proto = Pacer.prototype;
  const tryTake = proto.tryTake;
  const takeSend = proto.takeSend;
  const sent = proto.sent;
  proto.tryTake = async function (this: Pacer, workspaceId, cls) {
    const r = await tryTake.call(this, workspaceId, cls);
    if (r.ok) limits.set(r.token, r.limit);
    return r;
  };
  proto.takeSend = async function (this: Pacer, workspaceId, opts = {}): Promise<TakeSend> {
    const r = await takeSend.call(this, workspaceId, opts);
    if (r.kind === 'ok') {
      const turn: Turn = { workspaceId, at: r.at, leftAt: r.at, cls: opts.cls, limit: limits.get(r.token) ?? NaN };
      limits.delete(r.token);
      turns.push(turn);
      byToken.set(r.token, turn);
    }
    return r;
  };
  proto.sent = async function (this: Pacer, workspaceId, take, at) {
    const turn = byToken.get(take.token);
    if (turn) turn.leftAt = Math.max(turn.at, at);
    return sent.call(this, workspaceId, take, at);
  };
  return {
    all: () => [...turns],
    departures: (workspaceId) => turns.filter((t) => t.workspaceId === workspaceId).map((t) => t.leftAt),
    restore: () => {
      proto.tryTake = tryTake;
      proto.takeSend = takeSend;
      proto.sent = sent;
    },
  };
}

/**
 * When each delivery attempt to the messages of `shopIds` started (epoch ms), from the table every
 * worker process writes: for turns taken in other processes, whose pacers this one cannot watch.
 * An attempt starts as its turn is handed out, after the take's answer (within the pacer's
 * catch-up tolerance, else the take is moved or given up) and a few synchronous steps: so any
 * `limit + 1` of them span at least 1000 + guard - tolerance ms, less those steps. A guard of
 * 100 ms (SERVICE_RATE_GUARD_MS) leaves them 90 ms, which only a stalled process could use up.
 */
export async function attemptStarts(db: Db, shopIds: string[]): Promise<number[]> {
  const rows = await db.deliveryAttempt.findMany({ where: { message: { shopId: { in: shopIds } } }, select: { startedAt: true } });
  return rows.map((r) => r.startedAt.getTime());
}
