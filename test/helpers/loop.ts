// How often the event loop turned while some work ran: work on SQLite (synchronous statements)
// that never yields shows 0.

/** Runs `work`, counting the turns the event loop made meanwhile (a setImmediate runs once per turn). */
export async function turnsOfTheLoopDuring<T>(work: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let working = true;
  const tick = () => {
    turns += 1;
    if (working) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { value: await work(), turns };
  } finally {
    working = false;
  }
}

/**
 * Runs `work`, measuring the longest time the event loop went without a turn meanwhile: the
 * longest a request, a timer or a socket read had to wait on it.
 */
export async function longestStallDuring<T>(work: () => Promise<T>): Promise<{ value: T; longestMs: number; turns: number }> {
  let longestMs = 0;
  let turns = 0;
  let working = true;
  let last = performance.now();
  const tick = () => {
    const now = performance.now();
    longestMs = Math.max(longestMs, now - last);
    last = now;
    turns += 1;
    if (working) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    const value = await work();
    // the stretch from the last turn to the end of the work counts too
    longestMs = Math.max(longestMs, performance.now() - last);
    return { value, longestMs, turns };
  } finally {
    working = false;
  }
}
