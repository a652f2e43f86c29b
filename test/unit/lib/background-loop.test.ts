// The loop skeleton's wake-ups around a pass: one that comes during the pass starts another at
// once; one that comes during beforePass (stage 2's linger) is served by the pass that follows it.
import { BackgroundLoop } from '../../../src/lib/background-loop';

/** Turns of the event loop until `cond` holds (the loop's steps are promise continuations). */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setImmediate(r));
  expect(cond()).toBe(true);
}

/**
 * A loop whose first pass (or first beforePass, with `holdBeforePass`) waits until `open()`; every
 * pass then sleeps until a wake-up. Counts both.
 */
function heldLoop(holdBeforePass: boolean) {
  let open!: () => void;
  const held = new Promise<void>((r) => (open = r));
  const n = { befores: 0, passes: 0 };
  const loop = new BackgroundLoop({
    beforePass: async () => {
      n.befores += 1;
      if (holdBeforePass && n.befores === 1) await held;
    },
    pass: async () => {
      n.passes += 1;
      if (!holdBeforePass && n.passes === 1) await held;
      return Infinity;
    },
    onFailure: () => undefined,
  });
  return { loop, n, open };
}

/**
 * Starts a loop held in its first pass (or first beforePass), wakes it there and lets it go on;
 * then runs `then`, and stops the loop whatever it does. Returns the counts.
 */
async function wokenWhileHeld(
  holdBeforePass: boolean,
  then: (loop: BackgroundLoop, n: { befores: number; passes: number }) => Promise<void>,
): Promise<{ befores: number; passes: number }> {
  const { loop, n, open } = heldLoop(holdBeforePass);
  loop.start();
  try {
    await until(() => (holdBeforePass ? n.befores : n.passes) === 1);
    loop.wake();
    open();
    await then(loop, n);
  } finally {
    await loop.stop();
  }
  return n;
}

describe('BackgroundLoop', () => {
  it('a wake-up during a pass starts the next pass at once', async () => {
    const n = await wokenWhileHeld(false, (loop, counts) => until(() => counts.passes === 2 && loop.sleeping));
    expect(n).toEqual({ befores: 2, passes: 2 });
  });

  it('a wake-up during beforePass is served by the pass that follows, not by one more', async () => {
    const n = await wokenWhileHeld(true, async (loop, counts) => {
      await until(() => loop.sleeping);
      expect(counts).toEqual({ befores: 1, passes: 1 });
      // a wake-up while asleep: beforePass, then one pass
      loop.wake();
      await until(() => counts.passes === 2 && loop.sleeping);
    });
    expect(n).toEqual({ befores: 2, passes: 2 });
  });
});
