// One backfill, run by this process: for each kind, a Shopify bulk query (run again when it
// fails or its result expired), then the JSONL result read from the last checkpoint in
// batches. Each batch is one fenced transaction (store.commit) that also saves where the next
// batch starts. Reading waits while the shop's historical queue is full, and lets go of the
// download when the wait is long.
import type { Backfill } from '@prisma/client';
import {
  importedCustomerId,
  importedLineItemIds,
  isLineItem,
  mapImportedCustomer,
  mapImportedOrder,
  type ImportContext,
} from '../mapping/imports';
import type { CustomerProfile } from '../mapping/profile';
import type { NewMessage } from '../mapping';
import type { BackfillRunnerDeps } from './deps';
import { InvalidLineError, jsonlLines, LineTooLongError, RootGrouper, type RootRecord } from './jsonl';
import { parseKinds, parseProgress, resetKind, type Kind, type Progress } from './progress';
import { BulkSourceError, type BulkOperation } from './shopify-bulk';
import type { BackfillStore, ShopState } from './store';

export type StopReason = 'shutdown' | 'crash' | 'fence' | 'gone';

/** Thrown (and used as abort reason) when a job must end without failing its backfill. */
export class Stop extends Error {
  constructor(readonly reason: StopReason) {
    super(`backfill job stopped: ${reason}`);
  }
}

/** Ends the backfill as failed with a sentence for the merchant. */
export class Fatal extends Error {}

/** The queue stays full: let go of the download, and reopen it (Range) once there is room. */
class Pause extends Error {}

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELED', 'EXPIRED']);
const MAX_OPERATION_RUNS = 3;

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    const t = setTimeout(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Lets timers and sockets run: a stream already buffered, and a synchronous SQLite driver, would otherwise keep the event loop in one long microtask chain. */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
const YIELD_EVERY_LINES = 100;

function transient(err: unknown): boolean {
  if (err instanceof BulkSourceError) return err.kind === 'retryable' || err.kind === 'busy';
  if (
    err instanceof Stop ||
    err instanceof Fatal ||
    err instanceof Pause ||
    err instanceof InvalidLineError ||
    err instanceof LineTooLongError
  )
    return false;
  // network errors while streaming the body, database hiccups: resume from the last batch
  return true;
}

/** Objects read for one batch; they are mapped at commit, after their products are looked up. */
interface Batch {
  roots: RootRecord[];
  records: number;
}

/** One backfill being run by this process. */
export class Job {
  private readonly progress: Progress;
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
          if (p.attempts >= MAX_OPERATION_RUNS)
            throw new Fatal(`Shopify could not export the ${kind} (${MAX_OPERATION_RUNS} bulk operations failed)`);
          const askedAt = this.now().toISOString();
          const { id } = await this.retrying(`start the ${kind} export`, () =>
            this.deps.source.run(this.domain, kind, this.sinceFor(kind)),
          );
          p.operationId = id;
          p.operationAt = askedAt;
          p.attempts++;
          await this.save();
          this.log.info({ kind, operationId: id }, 'bulk operation started');
        }
        const op = await this.waitForOperation(p.operationId!);
        if (op.status !== 'COMPLETED') {
          this.log.warn(
            { kind, operationId: op.id, status: op.status, errorCode: op.errorCode },
            'bulk operation did not complete; running it again',
          );
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

  /** Reads from the last checkpoint to the end, resuming after transient failures and pauses. */
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
        if (err instanceof Pause) {
          await this.waitForRoom(0, false);
          failures = 0;
          continue;
        }
        if (!transient(err)) throw err;
        failures = this.progress.line > before ? 1 : failures + 1;
        if (failures >= max) throw new Fatal(`The ${kind} result could not be read: ${(err as Error).message}`);
        const delay = Math.min(60_000, (this.deps.retryBaseMs ?? 1_000) * 2 ** (failures - 1));
        this.log.warn(
          { kind, line: this.progress.line, err: (err as Error).message, retryInMs: delay },
          'reading the result failed; resuming from the last batch',
        );
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
    let batch: Batch = { roots: [], records: 0 };
    let last = { line: p.line, byte: p.byte };
    const add = (rec: RootRecord) => {
      batch.roots.push(rec);
      batch.records++;
    };
    for await (const line of lines) {
      if (line.number % YIELD_EVERY_LINES === 0) await yieldToLoop();
      last = { line: line.number, byte: line.end + 1 };
      const done = grouper.push(line);
      if (done) add(done);
      if (batch.records >= batchSize) {
        const next = grouper.pending!;
        await this.commit(kind, batch, { line: next.startLine, byte: next.startByte });
        batch = { roots: [], records: 0 };
      }
    }
    const tail = grouper.finish();
    if (tail) add(tail);
    if (batch.records > 0) await this.commit(kind, batch, last);
    if (grouper.orphans) this.log.warn({ kind, orphans: grouper.orphans }, 'child objects away from their parent were ignored');
  }

  /**
   * Maps a batch: orders with the images and links of their products (the live events' cache),
   * every object's customer with the profile stored for them (which the import's facts join).
   */
  private async map(kind: Kind, roots: RootRecord[]): Promise<{ messages: NewMessage[]; skipped: number; profiles: CustomerProfile[] }> {
    const items = roots.map((rec) => rec.children.filter(isLineItem));
    const customerIds = [...new Set(roots.map((rec) => importedCustomerId(kind, rec.root)).filter((id): id is string => id !== null))];
    const [products, stored] = await Promise.all([
      kind === 'orders' && this.deps.enrich
        ? this.deps.enrich({ id: this.b.shopId, domain: this.domain }, items.flatMap(importedLineItemIds))
        : undefined,
      this.store.profiles(this.b.shopId, customerIds),
    ]);
    const merged = new Map<string, CustomerProfile>();
    const ctx: ImportContext = {
      shopDomain: this.domain,
      settings: this.shop!.settings,
      now: this.now(),
      products,
      // the batch's earlier objects of the customer count too
      profile: (id) => merged.get(id) ?? stored.get(id) ?? null,
      factsAt: this.progress.operationAt ?? undefined,
    };
    const messages: NewMessage[] = [];
    let skipped = 0;
    roots.forEach((rec, i) => {
      const r = kind === 'customers' ? mapImportedCustomer(rec.root, ctx) : mapImportedOrder(rec.root, items[i]!, ctx);
      if (r.profile) merged.set(r.profile.customerId, r.profile);
      if ('skipped' in r) skipped++;
      else messages.push(r.message);
    });
    return { messages, skipped, profiles: [...merged.values()] };
  }

  private async commit(kind: Kind, batch: Batch, at: { line: number; byte: number }): Promise<void> {
    const mapped = await this.map(kind, batch.roots);
    await this.waitForRoom(mapped.messages.length, true);
    const started = Date.now();
    const base = this.progress;
    const result = await this.store.commit({
      backfill: this.b,
      kinds: this.kinds,
      messages: mapped.messages,
      profiles: mapped.profiles,
      skipLiveOrders: kind === 'orders',
      progress: (inserted, skippedLive) => {
        const next: Progress = { ...base, counts: { ...base.counts }, line: at.line, byte: at.byte, note: null };
        const c = base.counts[kind];
        next.counts[kind] = {
          ...c,
          processed: c.processed + batch.records,
          queued: c.queued + inserted,
          skipped: c.skipped + mapped.skipped + skippedLive,
        };
        return next;
      },
    });
    if (!result) throw new Stop('fence');
    // in place: callers hold a reference to the progress object
    Object.assign(this.progress, result.progress);
    if (result.inserted > 0) this.deps.onEnqueued?.(this.b.shopId);
    // at most half the process's time: reading is far faster than the paced sending anyway,
    // and live intake and delivery share this event loop (and, on SQLite, the one writer)
    await sleep(Math.min(1_000, Date.now() - started), this.signal);
  }

  /**
   * Waits while the shop's historical queue is full (then until it is half empty, so reading
   * goes in bursts), or while the service refuses the key; fails when the shop cannot deliver
   * at all. With the download open (`holdOpen`), a long wait throws Pause instead.
   */
  private async waitForRoom(n: number, holdOpen: boolean): Promise<void> {
    const max = this.deps.maxQueued ?? 10_000;
    const started = Date.now();
    let noted = false;
    let full = false;
    for (;;) {
      const shop = await this.refreshShop();
      if (shop.connection !== 'connected') {
        if (!noted) {
          this.progress.note = 'Paused: the email service refused the API key. The import continues once a valid key is saved.';
          await this.save();
          noted = true;
        }
        if (holdOpen && Date.now() - started > (this.deps.holdOpenMs ?? 20_000)) throw new Pause();
        await sleep(this.deps.pausePollMs ?? 5_000, this.signal);
        continue;
      }
      const queued = await this.store.queuedHistorical(this.b.shopId);
      if (queued === 0 || queued + n <= (full ? max / 2 : max)) return;
      full = true;
      if (holdOpen && Date.now() - started > (this.deps.holdOpenMs ?? 20_000)) throw new Pause();
      this.deps.onEnqueued?.(this.b.shopId);
      await sleep(Math.min(2_000, Math.max(100, (this.deps.leaseMs ?? 60_000) / 10)), this.signal);
    }
  }
}
