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
