// Group commit: items submitted while a write is in flight are written together by the next
// one, so under load each durable write carries many requests, and an idle system writes each
// at once. Every submitter learns the outcome of the write that carried its item: a failed
// write fails every item in it (nothing half-written: the write is one statement or one
// transaction).
export interface GroupCommitOptions<T, R> {
  /** Writes a group durably; returns one result per item, in order. */
  write(items: T[]): Promise<R[]>;
  /** Most items per write. */
  maxItems?: number;
  /** How long to wait for more items before a write when nothing is in flight (0: none). */
  lingerMs?: number;
}

interface Pending<T, R> {
  item: T;
  resolve(r: R): void;
  reject(err: unknown): void;
}

export class GroupCommitter<T, R> {
  private queue: Array<Pending<T, R>> = [];
  private writing = false;
  private timer?: NodeJS.Timeout;
  private readonly maxItems: number;
  /** Writes made and items carried, for metrics and benchmarks. */
  writes = 0;
  items = 0;

  constructor(private readonly opts: GroupCommitOptions<T, R>) {
    this.maxItems = Math.max(1, opts.maxItems ?? 500);
  }

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.writing || this.timer) return;
    const linger = this.opts.lingerMs ?? 0;
    if (linger > 0 && this.queue.length < this.maxItems) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, linger);
      return;
    }
    // the requests of this tick go together
    this.writing = true;
    setImmediate(() => void this.flush(true));
  }

  private async flush(reserved = false): Promise<void> {
    if (!reserved) {
      if (this.writing) return;
      this.writing = true;
    }
    const group = this.queue.splice(0, this.maxItems);
    try {
      if (group.length === 0) return;
      this.writes += 1;
      this.items += group.length;
      const results = await this.opts.write(group.map((p) => p.item));
      group.forEach((p, i) => p.resolve(results[i]!));
    } catch (err) {
      for (const p of group) p.reject(err);
    } finally {
      this.writing = false;
      if (this.queue.length) this.schedule();
    }
  }
}
