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
 * longest a request, a timer or a socket read had to wait on it. `longestCpuMs` is the most CPU
 * the process spent between two turns (its other threads, such as GC helpers, included): the
 * longest task's own cost, which a machine busy with other work stretches in `longestMs` but not
 * here.
 */
export async function longestStallDuring<T>(
  work: () => Promise<T>,
): Promise<{ value: T; longestMs: number; longestCpuMs: number; turns: number }> {
  let longestMs = 0;
  let longestCpuMs = 0;
  let turns = 0;
  let working = true;
  let last = performance.now();
  const cpuUs = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  let lastCpu = cpuUs();
  const measure = () => {
    const now = performance.now();
    const cpu = cpuUs();
    longestMs = Math.max(longestMs, now - last);
    longestCpuMs = Math.max(longestCpuMs, (cpu - lastCpu) / 1000);
    last = now;
    lastCpu = cpu;
  };
  const tick = () => {
    measure();
    turns += 1;
    if (working) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    const value = await work();
    // the stretch from the last turn to the end of the work counts too
    measure();
    return { value, longestMs, longestCpuMs, turns };
  } finally {
    working = false;
  }
}
