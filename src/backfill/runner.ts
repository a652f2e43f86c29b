// The historical import runner. It claims backfills under a lease, and for each kind runs a
// Shopify bulk query, waits for it (polling, or woken by the bulk_operations/finish webhook),
// then streams the JSONL result into the outbox's historical lane in batches. Each batch is
// one transaction that also saves where the next batch starts, so a crash or restart resumes
// at the last batch (an HTTP Range request skips what was read). Reading pauses while the
// shop already has `maxQueued` historical messages waiting, so the outbox never holds a whole
// store at once and a cancel has little to remove.
import { randomUUID } from 'node:crypto';
import type { Backfill } from '@prisma/client';
import type { Db, DbProvider } from '../db/client';
import { isLineItem, mapImportedCustomer, mapImportedOrder, type ImportContext } from '../mapping/imports';
import type { NewMessage } from '../mapping';
import type { Logger } from '../observability/logger';
import { InvalidLineError, jsonlLines, LineTooLongError, RootGrouper, type RootRecord } from './jsonl';
import { parseKinds, parseProgress, resetKind, type Kind, type Progress } from './progress';
import { BulkSourceError, type BulkOperation, type BulkSource } from './shopify-bulk';
import { BackfillStore, type ShopState } from './store';

export interface BackfillRunnerDeps {
  db: Db;
  provider: DbProvider;
  source: BulkSource;
  logger: Logger;
  now?: () => Date;
  /** Tells the delivery worker a shop has new due work. */
  onEnqueued?: (shopId: string) => void;
  runnerId?: string;
  /** How often to look for backfills to run. Default 2 000 ms. */
  pollMs?: number;
  /** Lease on a running backfill; renewed every third of it. Default 60 000 ms. */
  leaseMs?: number;
  /** Root objects (customers, orders) per transaction. Default 500. */
  batchSize?: number;
  /** Reading pauses while the shop has this many historical messages queued. Default 10 000. */
  maxQueued?: number;
  /** Polling of a running bulk operation: first and longest interval. Default [1 000, 10 000] ms. */
  opPollMs?: [number, number];
  /** Backfills this process runs at once. Default 2. */
  maxConcurrent?: number;
  /** Consecutive transient failures before a backfill fails. Default 8. */
  maxAttempts?: number;
  /** First retry delay, doubled each time up to a minute. Default 1 000 ms. */
  retryBaseMs?: number;
}

type StopReason = 'shutdown' | 'crash' | 'fence' | 'gone';

/** Thrown (and used as abort reason) when a job must end without failing its backfill. */
class Stop extends Error {
  constructor(readonly reason: StopReason) {
    super(`backfill job stopped: ${reason}`);
  }
}

/** Ends the backfill as failed with a sentence for the merchant. */
class Fatal extends Error {}

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELED', 'EXPIRED']);
const MAX_OPERATION_RUNS = 3;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, ms));
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Lets timers and sockets run: a stream already buffered, and a synchronous SQLite driver, would otherwise keep the event loop in one long microtask chain. */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
const YIELD_EVERY_LINES = 100;

function transient(err: unknown): boolean {
  if (err instanceof BulkSourceError) return err.kind === 'retryable' || err.kind === 'busy';
  if (err instanceof Stop || err instanceof Fatal || err instanceof InvalidLineError || err instanceof LineTooLongError) return false;
  // network errors while streaming the body, database hiccups: resume from the last batch
  return true;
}

interface Batch {
  messages: NewMessage[];
  records: number;
  skipped: number;
}

export class BackfillRunner {
  readonly runnerId: string;
  private readonly now: () => Date;
  private readonly store: BackfillStore;
  private readonly jobs = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private readonly opWaiters = new Map<string, () => void>();
  /** Operations whose finish webhook arrived while nobody was waiting (between two polls). */
  private readonly finishedOps = new Set<string>();
  private loop?: Promise<void>;
  private stopping = false;
  private wakeLoop?: () => void;

  constructor(private readonly deps: BackfillRunnerDeps) {
    this.runnerId = deps.runnerId ?? `b-${randomUUID().slice(0, 8)}`;
    this.now = deps.now ?? (() => new Date());
    this.store = new BackfillStore(deps.db, deps.provider, this.now, this.runnerId, this.leaseMs);
  }

  private get leaseMs(): number {
    return this.deps.leaseMs ?? 60_000;
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.loop = this.run();
  }

  /** Looks for work now (after a backfill was created). */
  wake(): void {
    this.wakeLoop?.();
  }

  /** Graceful: stops every job at its next step, gives the leases back. Unsaved reading is re-read later. */
  async stop(): Promise<void> {
    await this.halt('shutdown');
  }

  /** As if the process died: jobs stop where they are and keep their leases until they expire. For tests. */
  async crash(): Promise<void> {
    await this.halt('crash');
  }

  private async halt(reason: StopReason): Promise<void> {
    this.stopping = true;
    this.wakeLoop?.();
    for (const job of this.jobs.values()) job.controller.abort(new Stop(reason));
    await this.loop;
    await Promise.all([...this.jobs.values()].map((j) => j.done));
    this.loop = undefined;
  }

  /**
   * The bulk_operations/finish webhook: wakes the import waiting on that operation. Returns
   * whether the operation belongs to an import (a runner in another process polls on its own).
   */
  async onBulkOperationFinish(shopDomain: string, payload: unknown): Promise<boolean> {
    const id = (payload as { admin_graphql_api_id?: unknown } | null)?.admin_graphql_api_id;
    if (typeof id !== 'string' || !id) return false;
    const waiter = this.opWaiters.get(id);
    if (waiter) {
      waiter();
      return true;
    }
    const known = (await this.store.findByOperation(shopDomain, id)) !== null;
    if (known) {
      this.finishedOps.add(id);
      if (this.finishedOps.size > 1000) this.finishedOps.delete(this.finishedOps.values().next().value!);
    }
    return known;
  }

  get activeJobs(): number {
    return this.jobs.size;
  }

  private async run(): Promise<void> {
    const { logger } = this.deps;
    while (!this.stopping) {
      try {
        while (this.jobs.size < (this.deps.maxConcurrent ?? 2) && !this.stopping) {
          const b = await this.store.claimNext([...this.jobs.keys()]);
          if (!b) break;
          this.launch(b);
        }
      } catch (err) {
        logger.error({ err: (err as Error).message }, 'backfill runner: looking for work failed; retrying');
      }
      if (this.stopping) break;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, this.deps.pollMs ?? 2_000);
        this.wakeLoop = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  }

  private launch(b: Backfill): void {
    const controller = new AbortController();
    const done = this.runJob(b, controller)
      .catch((err: unknown) => this.deps.logger.error({ backfillId: b.id, err: (err as Error).message }, 'backfill job crashed'))
      .finally(() => {
        this.jobs.delete(b.id);
        if (!this.stopping) this.wakeLoop?.();
      });
    this.jobs.set(b.id, { controller, done });
  }

  private async runJob(b: Backfill, controller: AbortController): Promise<void> {
    const { logger } = this.deps;
    const signal = controller.signal;
    const job = new Job(this.deps, this.store, b, signal, this.now, (id, ms) => this.waitOperation(id, ms, signal));
    const heartbeat = setInterval(() => {
      this.store.renew(b.id).then(
        (ok) => {
          if (!ok && !signal.aborted) controller.abort(new Stop('fence'));
        },
        (err: unknown) => logger.warn({ backfillId: b.id, err: (err as Error).message }, 'backfill lease renewal failed'),
      );
    }, Math.max(50, Math.floor(this.leaseMs / 3)));
    try {
      logger.info({ backfillId: b.id, shopId: b.shopId, kinds: b.kinds }, 'backfill started or resumed');
      await job.run();
    } catch (err) {
      const reason = signal.aborted ? (signal.reason as Stop).reason : err instanceof Stop ? err.reason : null;
      if (reason === 'crash') return;
      if (reason === 'shutdown') {
        await this.store.release(b.id).catch(() => undefined);
        return;
      }
      if (reason === 'fence' || reason === 'gone') {
        await job.afterLostFence();
        return;
      }
      const message = err instanceof Fatal || err instanceof BulkSourceError || err instanceof InvalidLineError || err instanceof LineTooLongError
        ? err.message
        : `The import stopped on an unexpected error: ${(err as Error).message}`.slice(0, 500);
      logger.warn({ backfillId: b.id, err: message }, 'backfill failed');
      await job.fail(message);
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Sleeps `ms`, or less when the operation's finish webhook arrives. */
  private waitOperation(id: string, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      if (this.finishedOps.delete(id)) return resolve();
      const done = () => {
        clearTimeout(t);
        signal.removeEventListener('abort', onAbort);
        if (this.opWaiters.get(id) === done) this.opWaiters.delete(id);
        resolve();
      };
      const onAbort = () => {
        clearTimeout(t);
        if (this.opWaiters.get(id) === done) this.opWaiters.delete(id);
        reject(signal.reason);
      };
      const t = setTimeout(done, ms);
      this.opWaiters.set(id, done);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** One backfill being run by this process. */
class Job {
  private progress: Progress;
  private readonly kinds: Kind[];
  private shop: ShopState | null = null;

  constructor(
    private readonly deps: BackfillRunnerDeps,
    private readonly store: BackfillStore,
    private readonly b: Backfill,
    private readonly signal: AbortSignal,
    private readonly now: () => Date,
    private readonly waitOperation: (id: string, ms: number) => Promise<void>,
  ) {
    this.progress = parseProgress(b.progress);
    this.kinds = parseKinds(b.kinds);
  }

  private get log() {
    return this.deps.logger.child({ backfillId: this.b.id, shopId: this.b.shopId });
  }

  async run(): Promise<void> {
    if (this.kinds.length === 0) throw new Fatal('The import names no kind of data to import');
    await this.refreshShop();
    await this.estimateTotals();
    for (const kind of this.kinds) {
      if (this.progress.done.includes(kind)) continue;
      if (this.progress.kind !== kind) {
        resetKind(this.progress, kind);
        await this.save();
      }
      await this.importKind(kind);
      const p = this.progress;
      p.done.push(kind);
      p.kind = null;
      p.operationId = null;
      p.url = null;
      p.line = 0;
      p.byte = 0;
      p.attempts = 0;
      await this.save();
    }
    this.progress.note = null;
    if (!(await this.store.finish(this.b.id, this.kinds, this.progress, 'completed', null))) throw new Stop('fence');
    this.log.info({ counts: this.progress.counts }, 'backfill completed');
  }

  async fail(message: string): Promise<void> {
    await this.store.finish(this.b.id, this.kinds, this.progress, 'failed', message).catch(() => undefined);
  }

  /** The backfill was cancelled, taken over or erased: stop the bulk operation if we started it and it still runs. */
  async afterLostFence(): Promise<void> {
    const state = await this.store.state(this.b.id).catch(() => null);
    if (state === 'cancelled' && this.progress.operationId && !this.progress.url && this.shop) {
      await this.deps.source.cancel(this.shop.domain, this.progress.operationId).catch(() => undefined);
    }
    this.log.info({ state }, 'backfill job ended: no longer held by this runner');
  }

  private async save(): Promise<void> {
    if (!(await this.store.save(this.b.id, this.kinds, this.progress))) throw new Stop('fence');
  }

  private async refreshShop(): Promise<ShopState> {
    const shop = await this.store.shopState(this.b.shopId);
    if (!shop) throw new Stop('gone');
    if (shop.uninstalled) throw new Fatal('The app was uninstalled from the shop');
    if (!shop.connection) throw new Fatal('The shop is no longer connected to the email service');
    this.shop = shop;
    return shop;
  }

  private get domain(): string {
    return this.shop!.domain;
  }

  private sinceFor(kind: Kind): Date | null {
    return kind === 'orders' ? this.b.since : null;
  }

  /** Transient failures are retried with backoff; the counter restarts after any success. */
  private async retrying<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const max = this.deps.maxAttempts ?? 8;
    for (let attempt = 1; ; attempt++) {
      try {
        const out = await fn();
        if (this.progress.note && attempt > 1) this.progress.note = null;
        return out;
      } catch (err) {
        if (this.signal.aborted) throw this.signal.reason;
        if (!transient(err)) throw err;
        if (attempt >= max) throw new Fatal(`${(err as Error).message} (gave up after ${attempt} attempts to ${what})`);
        const delay = Math.min(60_000, (this.deps.retryBaseMs ?? 1_000) * 2 ** (attempt - 1)) * (0.8 + Math.random() * 0.4);
        this.log.warn({ what, attempt, err: (err as Error).message, retryInMs: Math.round(delay) }, 'backfill step failed; retrying');
        this.progress.note = `Retrying: ${(err as Error).message}`.slice(0, 300);
        await this.store.save(this.b.id, this.kinds, this.progress).catch(() => false);
        await sleep(delay, this.signal);
      }
    }
  }

  private async estimateTotals(): Promise<void> {
    let changed = false;
    for (const kind of this.kinds) {
      const c = this.progress.counts[kind];
      if (c.total !== null || this.progress.done.includes(kind)) continue;
      const n = await this.deps.source.count(this.domain, kind, this.sinceFor(kind)).catch(() => null);
      if (n !== null) {
        c.total = n;
        changed = true;
      }
    }
    if (changed) await this.save();
  }

  private async importKind(kind: Kind): Promise<void> {
    const p = this.progress;
    for (;;) {
      if (!p.url) {
        if (!p.operationId) {
          if (p.attempts >= MAX_OPERATION_RUNS) throw new Fatal(`Shopify could not export the ${kind} (${MAX_OPERATION_RUNS} bulk operations failed)`);
          const { id } = await this.retrying(`start the ${kind} export`, () => this.deps.source.run(this.domain, kind, this.sinceFor(kind)));
          p.operationId = id;
          p.attempts++;
          await this.save();
          this.log.info({ kind, operationId: id }, 'bulk operation started');
        }
        const op = await this.waitForOperation(p.operationId!);
        if (op.status !== 'COMPLETED') {
          this.log.warn({ kind, operationId: op.id, status: op.status, errorCode: op.errorCode }, 'bulk operation did not complete; running it again');
          resetKind(p, kind, true);
          await this.save();
          continue;
        }
        if (op.rootObjectCount !== null) p.counts[kind].total = op.rootObjectCount;
        if (!op.url) {
          // Shopify gives no file when the query matched nothing
          p.counts[kind].total = 0;
          return;
        }
        p.url = op.url;
        await this.save();
      }
      try {
        await this.readResult(kind);
        return;
      } catch (err) {
        if (err instanceof BulkSourceError && err.kind === 'expired') {
          this.log.warn({ kind, err: err.message }, 'result file expired; running the bulk operation again');
          resetKind(p, kind, true);
          await this.save();
          continue;
        }
        throw err;
      }
    }
  }

  private async waitForOperation(id: string): Promise<BulkOperation> {
    const [first, longest] = this.deps.opPollMs ?? [1_000, 10_000];
    let delay = first;
    for (;;) {
      const op = await this.retrying('check the bulk operation', () => this.deps.source.get(this.domain, id));
      if (!op) return { id, status: 'FAILED', errorCode: 'NOT_FOUND', objectCount: 0, rootObjectCount: null, url: null };
      if (TERMINAL.has(op.status)) return op;
      await this.waitOperation(id, delay);
      if (this.signal.aborted) throw this.signal.reason;
      delay = Math.min(longest, delay * 2);
    }
  }

  /** Reads from the last checkpoint to the end, resuming after transient failures. */
  private async readResult(kind: Kind): Promise<void> {
    const max = this.deps.maxAttempts ?? 8;
    let failures = 0;
    for (;;) {
      const before = this.progress.line;
      try {
        await this.readOnce(kind);
        return;
      } catch (err) {
        if (this.signal.aborted) throw this.signal.reason;
        if (!transient(err)) throw err;
        failures = this.progress.line > before ? 1 : failures + 1;
        if (failures >= max) throw new Fatal(`The ${kind} result could not be read: ${(err as Error).message}`);
        const delay = Math.min(60_000, (this.deps.retryBaseMs ?? 1_000) * 2 ** (failures - 1));
        this.log.warn({ kind, line: this.progress.line, err: (err as Error).message, retryInMs: delay }, 'reading the result failed; resuming from the last batch');
        await sleep(delay, this.signal);
      }
    }
  }

  private async readOnce(kind: Kind): Promise<void> {
    const p = this.progress;
    const opened = await this.deps.source.open(p.url!, p.byte, this.signal);
    const ranged = p.byte > 0 && opened.fromByte === p.byte;
    const lines = jsonlLines(opened.chunks, ranged ? { firstByte: p.byte, firstLine: p.line } : { skipLines: p.line });
    const grouper = new RootGrouper();
    const batchSize = this.deps.batchSize ?? 500;
    let batch: Batch = { messages: [], records: 0, skipped: 0 };
    let last = { line: p.line, byte: p.byte };
    const add = (rec: RootRecord) => {
      const ctx: ImportContext = { shopDomain: this.domain, settings: this.shop!.settings, now: this.now() };
      const r = kind === 'customers' ? mapImportedCustomer(rec.root, ctx) : mapImportedOrder(rec.root, rec.children.filter(isLineItem), ctx);
      batch.records++;
      if ('skipped' in r) batch.skipped++;
      else batch.messages.push(r.message);
    };
    for await (const line of lines) {
      if (line.number % YIELD_EVERY_LINES === 0) await yieldToLoop();
      last = { line: line.number, byte: line.end + 1 };
      const done = grouper.push(line);
      if (done) add(done);
      if (batch.records >= batchSize) {
        const next = grouper.pending!;
        await this.commit(kind, batch, { line: next.startLine, byte: next.startByte });
        batch = { messages: [], records: 0, skipped: 0 };
      }
    }
    const tail = grouper.finish();
    if (tail) add(tail);
    if (batch.records > 0) await this.commit(kind, batch, last);
    if (grouper.orphans) this.log.warn({ kind, orphans: grouper.orphans }, 'child objects away from their parent were ignored');
  }

  private async commit(kind: Kind, batch: Batch, at: { line: number; byte: number }): Promise<void> {
    await this.waitForRoom(batch.messages.length);
    const started = Date.now();
    const base = this.progress;
    const result = await this.store.commit({
      backfill: this.b,
      kinds: this.kinds,
      messages: batch.messages,
      skipLiveOrders: kind === 'orders',
      progress: (inserted, skippedLive) => {
        const next: Progress = { ...base, counts: { ...base.counts }, line: at.line, byte: at.byte, note: null };
        const c = base.counts[kind];
        next.counts[kind] = { ...c, processed: c.processed + batch.records, queued: c.queued + inserted, skipped: c.skipped + batch.skipped + skippedLive };
        return next;
      },
    });
    if (!result) throw new Stop('fence');
    this.progress = result.progress;
    if (result.inserted > 0) this.deps.onEnqueued?.(this.b.shopId);
    // at most half the process's time: reading is far faster than the paced sending anyway,
    // and live intake and delivery share this event loop (and, on SQLite, the one writer)
    await sleep(Math.min(1_000, Date.now() - started), this.signal);
  }

  /** Waits while the shop's historical queue is full, or its key is refused; fails when it cannot deliver at all. */
  private async waitForRoom(n: number): Promise<void> {
    const max = this.deps.maxQueued ?? 10_000;
    let noted = false;
    for (;;) {
      const shop = await this.refreshShop();
      if (shop.connection !== 'connected') {
        if (!noted) {
          this.progress.note = 'Paused: the email service refused the API key. The import continues once a valid key is saved.';
          await this.save();
          noted = true;
        }
        await sleep(5_000, this.signal);
        continue;
      }
      const queued = await this.store.queuedHistorical(this.b.shopId);
      if (queued === 0 || queued + n <= max) return;
      this.deps.onEnqueued?.(this.b.shopId);
      await sleep(Math.min(2_000, Math.max(100, (this.deps.leaseMs ?? 60_000) / 10)), this.signal);
    }
  }
}
