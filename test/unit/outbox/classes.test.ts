// The delivery classes as data, and the scheduler as a pure function: which class sends next,
// given what each class has due and the workspace's recent sends per class.
import fc from 'fast-check';
import {
  addSend,
  CLASS_OF_EVENT,
  classOf,
  DEFAULT_CLASS_POLICY,
  DELIVERY_CLASSES,
  floorsOf,
  nextClass,
  planClasses,
  type ClassIndex,
  type Usage,
} from '../../../src/outbox/classes';
import { EVENT_NAMES } from '../../../src/settings/settings';

const FLOORS = floorsOf(DEFAULT_CLASS_POLICY);
const ZERO: Usage = [0, 0, 0, 0];

/**
 * Runs the scheduler as a lane does, a planned batch of 3 (as at 10/s) at a time, for `sends`
 * turns; `due(turn)` says how many each class has due.
 */
function simulate(sends: number, due: (turn: number) => number[], floors = FLOORS, start: Usage = ZERO) {
  const counts = [0, 0, 0, 0];
  let usage = start;
  for (let t = 0; t < sends;) {
    const d = due(t);
    const plan = planClasses(d, usage, floors, 3);
    if (plan.length === 0) t += 1;
    for (const c of plan) {
      if (!(d[c]! > 0)) throw new Error(`class ${c} planned with nothing due`);
      counts[c]! += 1;
      usage = addSend(usage, c);
      t += 1;
    }
  }
  return { counts };
}

describe('the delivery classes', () => {
  it('put every event in exactly one class', () => {
    for (const name of [...EVENT_NAMES, 'connector_test', 'contact_delete']) {
      expect(DELIVERY_CLASSES).toContain(CLASS_OF_EVENT[name as keyof typeof CLASS_OF_EVENT]);
    }
    expect(Object.keys(CLASS_OF_EVENT).sort()).toEqual([...EVENT_NAMES, 'connector_test', 'contact_delete'].sort());
    expect(classOf('order_placed')).toBe(0);
    expect(classOf('email_unsubscribed')).toBe(0);
    expect(classOf('contact_delete')).toBe(0);
    expect(classOf('checkout_abandoned')).toBe(1);
    expect(classOf('viewed_product')).toBe(2);
    // a name the table does not know is never starved
    expect(classOf('something_new')).toBe(0);
  });

  it('floors leave most of the budget to the highest class', () => {
    expect(FLOORS[0]).toBe(0);
    expect(FLOORS.reduce((a, b) => a + b, 0)).toBeLessThan(0.5);
  });
});

describe('which class sends next', () => {
  it('sends nothing when nothing is due, and the only class due when one is', () => {
    expect(nextClass([0, 0, 0, 0], ZERO, FLOORS)).toBeNull();
    for (const k of [0, 1, 2, 3] as ClassIndex[]) {
      const due = [0, 0, 0, 0];
      due[k] = 5;
      expect(nextClass(due, [50, 0, 0, 0], FLOORS)).toBe(k);
    }
  });

  it('sends the highest class while the lower ones have their floor share', () => {
    // recent sends: 80% critical, 12% behaviour, 8% history: floors (10%, 5%) are met
    expect(nextClass([5, 0, 5, 5], [40, 0, 6, 4], FLOORS)).toBe(0);
  });

  it('sends a lower class that fell below its floor first, the furthest below first', () => {
    expect(nextClass([5, 0, 5, 5], [48, 0, 1, 1], FLOORS)).toBe(2);
    expect(nextClass([5, 0, 5, 5], [45, 0, 5, 0], FLOORS)).toBe(3);
  });

  it('plans a batch within what each class has due', () => {
    // behaviour is below its floor, but a floor's send is never followed by another while critical waits
    expect(planClasses([1, 0, 5, 0], [50, 0, 0, 0], FLOORS, 3)).toEqual([2, 0, 2]);
    expect(planClasses([0, 0, 5, 0], [50, 0, 0, 0], FLOORS, 3)).toEqual([2, 2, 2]);
    expect(planClasses([0, 0, 0, 0], ZERO, FLOORS, 3)).toEqual([]);
    expect(planClasses([2, 0, 0, 0], ZERO, FLOORS, 5)).toEqual([0, 0]);
  });

  it('never picks a class with nothing due (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(3), { minLength: 4, maxLength: 4 }),
        fc.array(fc.float({ min: 0, max: 50, noNaN: true }), { minLength: 4, maxLength: 4 }),
        (due, usage) => {
          const c = nextClass(due, usage as Usage, FLOORS);
          if (due.every((n) => n === 0)) return c === null;
          return c !== null && due[c]! > 0;
        },
      ),
    );
  });

  it('gives each backlogged lower class its floor share ± 2 points, and the rest to the highest (property)', () => {
    fc.assert(
      fc.property(
        fc.subarray([0, 1, 2, 3] as ClassIndex[], { minLength: 2 }),
        fc.record({
          t: fc.double({ min: 0.02, max: 0.2, noNaN: true }),
          b: fc.double({ min: 0.02, max: 0.2, noNaN: true }),
          h: fc.double({ min: 0.02, max: 0.2, noNaN: true }),
        }),
        (backlogged, f) => {
          const floors = [0, f.t, f.b, f.h];
          const due = [0, 1, 2, 3].map((k) => (backlogged.includes(k as ClassIndex) ? 1_000_000 : 0));
          const sends = 2_000;
          const { counts } = simulate(sends, () => due, floors);
          const top = Math.min(...backlogged);
          for (const k of backlogged) {
            if (k === top) continue;
            expect(Math.abs(counts[k]! / sends - floors[k]!)).toBeLessThanOrEqual(0.02);
          }
          const lowerFloors = backlogged.filter((k) => k !== top).reduce((a: number, k) => a + floors[k]!, 0);
          expect(counts[top]! / sends).toBeGreaterThanOrEqual(1 - lowerFloors - 0.02);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('gives a trickle of critical work its turn at once, whatever the backlog (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 40 }), (every) => {
        // a critical message falls due every `every` turns behind a deep behaviour and history backlog
        let waiting = 0;
        let worstWait = 0;
        let since = 0;
        let usage: Usage = [0, 0, 30, 5];
        for (let t = 0; t < 3_000; t++) {
          if (t % every === 0) waiting += 1;
          const c = nextClass([waiting, 0, 1_000_000, 1_000_000], usage, FLOORS)!;
          if (c === 0) {
            waiting -= 1;
            since = 0;
          } else if (waiting > 0) worstWait = Math.max(worstWait, ++since);
          usage = addSend(usage, c);
        }
        // a critical message waits at most a couple of turns for a floor's send
        expect(worstWait).toBeLessThanOrEqual(3);
      }),
      { numRuns: 50 },
    );
  });

  it('needs no shared state but the usage: two lanes planning from the same view agree', () => {
    const view = [3, 0, 3, 3];
    const usage: Usage = [30, 0, 2, 1];
    expect(planClasses(view, usage, FLOORS, 3)).toEqual(planClasses(view, usage, FLOORS, 3));
  });
});
