// A lane's arithmetic: batch size, its classes, its send order, its lock, and whether it drained
// the shop.
import { DEFAULT_CLASS_POLICY, floorsOf, type ClassIndex, type Usage } from '../../../src/outbox/classes';
import { batchSizeFor, inPlanOrder, lockMsFor, planBatch, tookAll } from '../../../src/outbox/delivery/batch-plan';
import type { ClaimedMessage } from '../../../src/outbox/message';

const FLOORS = floorsOf(DEFAULT_CLASS_POLICY);
const ZERO: Usage = [0, 0, 0, 0];
const NONE = [false, false, false, false];

function message(id: number, deliveryClass: ClassIndex): ClaimedMessage {
  const at = new Date(0);
  return {
    id,
    shopId: 's',
    kind: 'event',
    eventName: 'e',
    deliveryClass,
    email: null,
    body: '{}',
    attempts: 1,
    sends: 1,
    runAt: at,
    dueAt: at,
    lockedUntil: null,
  };
}

describe("a lane's batch", () => {
  it('is a quarter second of the limit, at least one, at most the cap', () => {
    expect(batchSizeFor(10, 50)).toBe(3);
    expect(batchSizeFor(1, 50)).toBe(1);
    expect(batchSizeFor(1000, 50)).toBe(50);
  });

  it('claims no more of a class than the shop has due, and no more in all than the batch', () => {
    for (const own of [
      [5, 0, 0, 0],
      [1, 1, 1, 1],
      [0, 0, 9, 2],
      [0, 0, 0, 0],
    ]) {
      const counts = planBatch({ own, others: NONE }, ZERO, FLOORS, 3, true);
      counts.forEach((n, k) => expect(n).toBeLessThanOrEqual(own[k]!));
      expect(counts.reduce((a, b) => a + b, 0)).toBe(
        Math.min(
          3,
          own.reduce((a, b) => a + b, 0),
        ),
      );
    }
  });

  it('leaves the turns of a higher class due at another shop of the workspace to that shop', () => {
    const due = { own: [0, 0, 5, 0], others: [true, false, false, false] };
    const alone = planBatch({ ...due, others: NONE }, ZERO, FLOORS, 3, true);
    const shared = planBatch(due, ZERO, FLOORS, 3, true);
    expect(alone[2]).toBe(3);
    expect(shared[2]).toBeLessThan(alone[2]!);
    // without the others in view (the lane waited once already), it sends of its own
    expect(planBatch(due, ZERO, FLOORS, 1, false)[2]).toBe(1);
  });

  it('sends in the scheduler’s order: the same messages, a class below its floor first, else the highest', () => {
    const batch = [message(1, 2), message(2, 0), message(3, 0)];
    // behaviour has had more than its floor of the recent sends: critical goes first
    const fed = inPlanOrder(batch, [80, 0, 20, 0], FLOORS);
    expect(fed.map((m) => m.id).sort()).toEqual([1, 2, 3]);
    expect(fed[0]!.deliveryClass).toBe(0);
    // behaviour has had nothing: it catches up its floor with one send first
    expect(inPlanOrder(batch, [100, 0, 0, 0], FLOORS).map((m) => m.deliveryClass)).toEqual([2, 0, 0]);
  });

  it('locks long enough for every send at the pace, the last one’s timeout and its recording', () => {
    // 3 messages at 10/s: 4 intervals of 100 ms, a 10 s timeout, 5 s to record
    expect(lockMsFor(3, 10, 10_000)).toBe(400 + 10_000 + 5_000);
  });

  it('took all the shop had due only when every class was under the cap and claimed whole', () => {
    expect(tookAll({ own: [2, 0, 1, 0], others: NONE }, [2, 0, 1, 0], 3)).toBe(true);
    // at the cap: more may be due behind it
    expect(tookAll({ own: [3, 0, 0, 0], others: NONE }, [3, 0, 0, 0], 3)).toBe(false);
    // a class left for another batch
    expect(tookAll({ own: [2, 0, 1, 0], others: NONE }, [2, 0, 0, 0], 3)).toBe(false);
  });
});
