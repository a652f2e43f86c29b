// The one skeleton of every background loop (the delivery worker's pass, stage 2, the import
// runner, the product-alert runner): run a pass, sleep until the next is due or a wake-up comes,
// and after a failure wait a growing time that no wake-up shortens, so a failing loop never spins.
// stop() ends any sleep and returns once the pass under way is over.
import { Backoff, LOOP_BACKOFF, type BackoffPolicy } from './backoff';
import { LoopSleep } from './loop-sleep';

export interface BackgroundLoopOptions {
  /**
   * One pass. Returns how long to sleep before the next one unless woken (ms; Infinity: until a
   * wake-up). A wake-up that came during the pass starts the next one at once.
   */
  pass: () => Promise<number>;
  /**
   * Runs before each pass; a wake-up that comes meanwhile is served by that pass, not by one more
   * after it (stage 2 lingers here, so the receipts of a few ms share one batch).
   */
  beforePass?: () => Promise<void>;
  /** A pass threw: report it (`retryInMs`: the wait now sat out before the next). */
  onFailure: (err: unknown, retryInMs: number) => void;
  /** The waits after failures in a row (LOOP_BACKOFF: 1 s doubling to 30 s). */
  backoff?: BackoffPolicy;
  /** The jitter's source (tests). */
  random?: () => number;
}

export class BackgroundLoop {
  private readonly sleeper = new LoopSleep();
  private readonly backoff: Backoff<string>;
  private loop?: Promise<void>;
  private stopping = false;
  private woken = false;

  constructor(private readonly o: BackgroundLoopOptions) {
    this.backoff = new Backoff<string>(o.backoff ?? LOOP_BACKOFF, undefined, o.random);
  }

  /** Whether stop() was called: a long pass checks it between its steps. */
  get stopped(): boolean {
    return this.stopping;
  }

  /** Whether the loop is asleep between passes. */
  get sleeping(): boolean {
    return this.sleeper.sleeping;
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.loop = this.run();
  }

  /** Ends any sleep; resolves once the pass under way (if any) is over. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.sleeper.interrupt();
    await this.loop;
    this.loop = undefined;
  }

  /** New work: the next pass starts now (not during a failure's wait). */
  wake(): void {
    this.woken = true;
    this.sleeper.wake();
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      if (this.o.beforePass) await this.o.beforePass();
      this.woken = false;
      let wait: number;
      try {
        wait = await this.o.pass();
        this.backoff.succeed('pass');
      } catch (err) {
        const delay = this.backoff.fail('pass');
        this.o.onFailure(err, delay);
        // the whole wait, whatever wake-ups come meanwhile: a failing pass never spins
        await this.sleeper.sleep(delay, false);
        continue;
      }
      if (this.stopping || this.woken) continue;
      await this.sleeper.sleep(Number.isFinite(wait) ? Math.max(0, wait) : 2 ** 31 - 1);
    }
  }
}
