// Group commit: items submitted while a write is in flight are written together by the next
// one, so under load each durable write carries many requests, and an idle system writes each
// at once. Every submitter learns the outcome of the write that carried its item: a failed
// write fails every item in it (nothing half-written: the write is one statement or one
// transaction).
import type { DbProvider } from './client';

export interface GroupCommitOptions<T, R> {
  /** Writes a group durably; returns one result per item, in order. */
  write(items: T[]): Promise<R[]>;
  /** Most items per write. */
  maxItems?: number;
  /** How long to wait for more items before a write when nothing is in flight (0: none). */
  lingerMs?: number;
  /**
   * Runs after a group's write and before its submitters learn the outcome; the next group's
   * write may start meanwhile. For the part of a durable write that other writes can share
   * (SQLite's sync of its WAL, which covers every commit made before it started).
   */
  afterWrite?: () => Promise<void>;
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
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.writing = false;
      if (this.queue.length) this.schedule();
    };
    try {
      if (group.length === 0) return;
      this.writes += 1;
      this.items += group.length;
      const results = await this.opts.write(group.map((p) => p.item));
      if (this.opts.afterWrite) {
        release();
        await this.opts.afterWrite();
      }
      group.forEach((p, i) => p.resolve(results[i]!));
    } catch (err) {
      for (const p of group) p.reject(err);
    } finally {
      release();
    }
  }
}

export interface CoalesceOptions<T, R> {
  /** One statement for items with distinct keys; one result per item, in order. */
  run(items: T[]): Promise<R[]>;
  /** Items with one key never share a statement (PostgreSQL updates a row once per statement). */
  key(item: T): string;
  /** Most items per statement. */
  maxItems?: number;
}

type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };

/**
 * One statement's calls from concurrent callers (the delivery worker's lanes), made together: the
 * calls made while one statement is in flight go out as the next one, over arrays, so under load
 * each round trip carries many calls and an idle system makes each at once. Items with the same
 * key go in separate statements, in the order they were made. A statement of several items that
 * fails (a deadlock with another process, one item the database refuses) is atomic, so nothing of
 * it happened: each of its items is run again alone and learns its own outcome.
 */
export class Coalescer<T, R> {
  private readonly committer: GroupCommitter<T, Settled<R>>;

  constructor(private readonly opts: CoalesceOptions<T, R>) {
    this.committer = new GroupCommitter<T, Settled<R>>({ maxItems: opts.maxItems ?? 200, write: (items) => this.write(items) });
  }

  async call(item: T): Promise<R> {
    const r = await this.committer.submit(item);
    if (!r.ok) throw r.error;
    return r.value;
  }

  private async write(items: T[]): Promise<Array<Settled<R>>> {
    const results = new Array<Settled<R>>(items.length);
    // rounds of distinct keys: an item goes in the round after its key's previous item
    const rounds: number[][] = [];
    const last = new Map<string, number>();
    items.forEach((item, i) => {
      const k = this.opts.key(item);
      const r = (last.get(k) ?? -1) + 1;
      last.set(k, r);
      (rounds[r] ??= []).push(i);
    });
    for (const round of rounds) {
      const out = await this.settle(round.map((i) => items[i]!));
      round.forEach((i, j) => (results[i] = out[j]!));
    }
    return results;
  }

  private async settle(batch: T[]): Promise<Array<Settled<R>>> {
    try {
      return (await this.opts.run(batch)).map((value) => ({ ok: true, value }));
    } catch (error) {
      if (batch.length === 1) return [{ ok: false, error }];
    }
    const out: Array<Settled<R>> = [];
    for (const item of batch) out.push(...(await this.settle([item])));
    return out;
  }
}

/**
 * A per-row statement's call (db/raw.ts perRow): on PostgreSQL made together with the concurrent
 * calls (Coalescer); on SQLite, where a statement costs no round trip, run alone at once.
 */
export function perRowCall<T, R>(provider: DbProvider, opts: CoalesceOptions<T, R>): (item: T) => Promise<R> {
  if (provider !== 'postgres') return (item) => opts.run([item]).then((r) => r[0]!);
  const coalescer = new Coalescer(opts);
  return (item) => coalescer.call(item);
}
