// A background loop's sleep. A wake-up (new work) ends it early, unless the loop is waiting out a
// failure, which no wake-up shortens; stopping ends any sleep. One sleep at a time.
export class LoopSleep {
  private end?: (force: boolean) => void;

  /** Sleeps `ms`, through a timer; `wakeable`: whether a wake-up ends it early. */
  async sleep(ms: number, wakeable = true): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, ms));
      this.end = (force) => {
        if (!wakeable && !force) return;
        clearTimeout(timer);
        resolve();
      };
    });
    this.end = undefined;
  }

  /** New work: ends a wakeable sleep. */
  wake(): void {
    this.end?.(false);
  }

  /** The loop stops: ends any sleep. */
  interrupt(): void {
    this.end?.(true);
  }

  /** Whether the loop is asleep (not in the middle of a pass). */
  get sleeping(): boolean {
    return this.end !== undefined;
  }
}
