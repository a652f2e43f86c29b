// The loop skeleton's wake-ups around a pass: one that comes during the pass starts another at
// once; one that comes during beforePass (stage 2's linger) is served by the pass that follows it.
import { BackgroundLoop } from '../../../src/lib/background-loop';

/** Turns of the event loop until `cond` holds (the loop's steps are promise continuations). */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setImmediate(r));
  expect(cond()).toBe(true);
}

/** A promise and the function that resolves it. */
function gate(): { open: () => void; wait: Promise<void> } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { open, wait };
}

describe('BackgroundLoop', () => {
  it('a wake-up during a pass starts the next pass at once', async () => {
    const first = gate();
    let passes = 0;
    const loop = new BackgroundLoop({
      pass: async () => {
        passes += 1;
        if (passes === 1) await first.wait;
        return Infinity;
      },
      onFailure: () => undefined,
    });
    loop.start();
    try {
      await until(() => passes === 1);
      loop.wake();
      first.open();
      await until(() => passes === 2 && loop.sleeping);
    } finally {
      await loop.stop();
    }
    expect(passes).toBe(2);
  });

  it('a wake-up during beforePass is served by the pass that follows, not by one more', async () => {
    const lingering = gate();
    let befores = 0;
    let passes = 0;
    const loop = new BackgroundLoop({
      beforePass: async () => {
        befores += 1;
        if (befores === 1) await lingering.wait;
      },
      pass: async () => {
        passes += 1;
        return Infinity;
      },
      onFailure: () => undefined,
    });
    loop.start();
    try {
      await until(() => befores === 1);
      loop.wake();
      lingering.open();
      await until(() => loop.sleeping);
      expect([befores, passes]).toEqual([1, 1]);
      // a wake-up while asleep: beforePass, then one pass
      loop.wake();
      await until(() => passes === 2 && loop.sleeping);
      expect(befores).toBe(2);
    } finally {
      await loop.stop();
    }
  });
});
