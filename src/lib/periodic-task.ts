// The one skeleton of the tasks that run every few minutes (the storefront's and notify-me's
// sweepers, the storefront's product retries). run() never overlaps itself: a call waits for the
// one under way, and still runs when that one failed. start() runs it on an interval that never
// keeps the process alive; a failure there is reported, never thrown from the timer, and the next
// tick tries again.
export interface PeriodicTask<T> {
  run(): Promise<T>;
  start(): void;
  stop(): void;
}

export interface PeriodicTaskOptions<T> {
  run: () => Promise<T>;
  everyMs: number;
  /** A run started by the interval threw. */
  onFailure: (err: unknown) => void;
}

export function periodicTask<T>(o: PeriodicTaskOptions<T>): PeriodicTask<T> {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  const task: PeriodicTask<T> = {
    run() {
      const p = running.then(o.run, o.run);
      running = p.catch(() => undefined);
      return p;
    },
    start() {
      if (timer) return;
      timer = setInterval(() => {
        task.run().catch(o.onFailure);
      }, o.everyMs);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
  return task;
}
