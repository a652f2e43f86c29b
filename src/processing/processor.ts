// Stage 2: takes stored receipts in batches, in arrival order per shop, and runs the use cases
// on them (mapping, change detection, abandonment, shipping state, GDPR). Receipts are spread
// over partitions by shop; a process works the partitions it leased (several at once, oldest
// pending first, in batches that span them), so one shop's receipts are processed by one process
// at a time, in order, while other partitions run elsewhere.
// Each batch's effects and the marking of its receipts commit in one transaction, fenced on the
// lease: a crash mid-batch redoes the batch, and nothing is doubled (messages are unique by
// source id, receipts are marked only while still pending).
import { randomUUID } from 'node:crypto';
import { rawOf, type Db, type DbProvider } from '../db/client';
import { prepare, rawTimestamp, turnOfTheLoop, type RawStatement, type StatementBuilder } from '../db/raw';
import { driverTransaction, type SqlTx } from '../db/transaction';
import { isDatabaseUnavailable } from '../db/unavailable';
import { parseWebhookBody } from '../mapping';
import { Backoff, LOOP_BACKOFF } from '../lib/backoff';
import { LoopSleep } from '../lib/loop-sleep';
import { LogOnce, LoopFailures } from '../observability/log-once';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { lowerDue, type DueEntry } from '../outbox/due';
import { Sql } from '../db/sql';
import type { ForwardResult, ParsedReceipt } from './forward/forward-receipts';
import type { GdprResult } from './privacy/gdpr';
import { handlingOf, isSerial, type SideEffectTopic } from './topics';
import type { ForwardStore } from './forward/forward-store';
import { LoopBudget } from './loop-budget';
import { PARTITIONS, type PendingReceipt, type ReceiptOutcome, type ReceiptStore } from '../intake/receipt-store';
import { Prisma } from '@prisma/client';

/** A topic handled beside the forwarded ones (bulk operation finished, scopes changed, product changed). */
export type SideHandler = (r: ParsedReceipt) => Promise<{ outcome: 'accepted' | 'ignored'; reason?: string }>;

/** What a stage for another kind of receipt (storefront pixel batches) plans for a batch. */
export interface StagePlan {
  outcomes: ReceiptOutcome[];
  /** Applies the plan in the batch's transaction. */
  write(tx: SqlTx, now: Date): Promise<void>;
  /** Messages it queued, to index as due in the same transaction. */
  due: DueEntry[];
}

/**
 * Stage 2 for receipts of kind 'pixel': reads what it needs, writes nothing until write(). `signed`:
 * the unit's webhooks, whose emails vouch for storefront visitors' claims (src/processing/storefront/vouch.ts).
 */
export type PixelStage = (items: ParsedReceipt[], signed: ParsedReceipt[]) => Promise<StagePlan>;

export interface ProcessorDeps {
  db: Db;
  provider: DbProvider;
  logger: Logger;
  metrics: Metrics;
  receipts: ReceiptStore;
  forwardStore: ForwardStore;
  forward: (items: ParsedReceipt[]) => Promise<ForwardResult>;
  gdpr: { handle(r: ParsedReceipt): Promise<GdprResult> };
  /** Topics handled by a side handler rather than forwarded. */
  sideHandlers?: Record<SideEffectTopic, SideHandler>;
  /** Storefront pixel batches (receipts of kind 'pixel'); ignored without it. */
  pixel?: PixelStage;
  /** After a commit that queued messages: index them and wake the delivery workers. */
  onDue: (entries: DueEntry[]) => void;
  now?: () => Date;
  processorId?: string;
  /** Receipts per batch. */
  batchSize?: number;
  /** How long a turn on the leased partitions lasts before they are given up and leased again (ms). */
  turnMs?: number;
  /**
   * Partitions one process leases at once (default half of them): a batch spans them, so 200
   * shops with a receipt each take two batches rather than sixteen, and a second process finds
   * the other half free.
   */
  partitionsPerTurn?: number;
  /** A partition's lease, renewed by every batch. */
  leaseMs?: number;
  /** The slow safety poll when no wake-up comes. */
  safetyPollMs?: number;
  /**
   * Under a stream of receipts, how long a wake-up that comes within this time of the last
   * batch waits for more before the next batch (default 10 ms; 0: never). See run().
   */
  lingerMs?: number;
  /** How long processed receipts are kept for deduplication (RECEIPT_RETENTION_DAYS). */
  retentionMs?: number;
}

class LeaseLost extends Error {}

// Leases up to n partitions with pending receipts that are free, ours already, or expired,
// oldest pending receipt first (index probes only), so no partition waits behind busier
// ones. The outer condition is checked again on the row it locks: two processes never share
// a partition. On PostgreSQL a partition another process is leasing at this moment is skipped,
// not waited for: two processors woken by one NOTIFY lease half of the partitions each (one that
// waited for the other's rows would find them taken, lease nothing and go back to sleep while the
// other worked through both halves). Parameters: 1 processor, 2 until, 3 now, 4 n.
const LEASE_PENDING: StatementBuilder = (p, d) => {
  const free = (t: string) => `(${t}"owner" IS NULL OR ${t}"owner" = ${p(1)} OR ${t}"leasedUntil" < ${p(3, 'timestamp')})`;
  const pending = `"r"."partition" = "l"."partition" AND "r"."processedAt" IS NULL`;
  return `
  UPDATE "ReceiptLease" SET "owner" = ${p(1)}, "leasedUntil" = ${p(2, 'timestamp')}
  WHERE ${free('')} AND "partition" IN (
    SELECT "l"."partition" FROM "ReceiptLease" AS "l"
    WHERE ${free('"l".')} AND EXISTS (SELECT 1 FROM "WebhookReceipt" AS "r" WHERE ${pending})
    ORDER BY (SELECT MIN("r"."id") FROM "WebhookReceipt" AS "r" WHERE ${pending}) LIMIT ${p(4, 'integer')} ${d.skipLocked('"l"')})
  RETURNING "partition"`;
};

export class ReceiptProcessor {
  readonly processorId: string;
  private readonly now: () => Date;
  private readonly sql: Sql;
  private stopping = false;
  private loop?: Promise<void>;
  private readonly sleeper = new LoopSleep();
  private woken = false;
  private lastRetention = 0;
  /** When the last drain that processed anything ended (epoch ms). */
  private lastBatchAt = 0;
  private seeded = false;
  private readonly leaseStatement: RawStatement<{ partition: number }>;
  private readonly backoff = new Backoff<string>(LOOP_BACKOFF);
  private readonly failures: LoopFailures;

  constructor(private readonly deps: ProcessorDeps) {
    this.processorId = deps.processorId ?? `p-${randomUUID().slice(0, 8)}`;
    this.now = deps.now ?? (() => new Date());
    this.failures = new LoopFailures(new LogOnce(deps.logger, 60_000), deps.metrics.loopFailures);
    this.sql = new Sql(deps.db, deps.provider);
    this.leaseStatement = prepare(rawOf(deps.db), 'receipt_lease', LEASE_PENDING, { lazyCommit: true });
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.sleeper.interrupt();
    await this.loop;
    this.loop = undefined;
  }

  /** New receipts were stored (here or in a web process). */
  nudge(): void {
    this.woken = true;
    this.sleeper.wake();
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      // Receipts arriving one every few ms (many shops' orders at once) would each wake a batch of
      // one or two receipts, and a batch's fixed cost (lease, the plan's reads, a transaction:
      // about a dozen statements) would be most of stage 2's. A wake-up this soon after a batch
      // waits a few ms, so the receipts of that time share one; an idle shop's receipt goes at once.
      const linger = this.deps.lingerMs ?? 10;
      if (linger > 0 && Date.now() - this.lastBatchAt < linger && !this.stopping) await new Promise((r) => setTimeout(r, linger));
      this.woken = false;
      try {
        if ((await this.drainAll()) > 0) this.lastBatchAt = Date.now();
        await this.housekeeping();
        this.backoff.succeed('drain');
      } catch (err) {
        // the whole wait, whatever wake-ups come meanwhile: a failing drain never spins
        const delay = this.backoff.fail('drain');
        this.failures.report('stage2', err, 'receipt processing failed; retrying after a growing wait', { retryInMs: delay });
        await this.sleeper.sleep(delay, false);
        continue;
      }
      if (this.stopping || this.woken) continue;
      await this.sleeper.sleep(this.deps.safetyPollMs ?? 5_000);
    }
  }

  /**
   * Processes everything pending now: leases partitions with pending receipts (oldest first),
   * works them in turns of a few seconds, and leases again, until it finds none it could lease;
   * returns how many. Under a stream that never ends it returns after a minute, asking the loop
   * to come straight back, so the hourly housekeeping still gets its turn.
   */
  async drainAll(): Promise<number> {
    await this.seedLeases();
    let total = 0;
    const started = Date.now();
    while (!this.stopping) {
      if (Date.now() - started > 60_000) {
        this.woken = true;
        return total;
      }
      const partitions = await this.lease();
      if (partitions.length === 0) return total;
      const turn = { released: false };
      try {
        total += await this.drainLeased(partitions, turn);
      } finally {
        // the batch that drained the partitions gave the leases up in its own transaction
        if (!turn.released)
          await this.deps.db.receiptLease.updateMany({
            where: { partition: { in: partitions }, owner: this.processorId },
            data: { owner: null, leasedUntil: null },
          });
      }
    }
    return total;
  }

  private async seedLeases(): Promise<void> {
    if (this.seeded) return;
    const values = Array.from({ length: PARTITIONS }, (_, p) => Prisma.sql`(${this.sql.int(p)})`);
    await this.deps.db.$executeRaw(
      Prisma.sql`INSERT INTO "ReceiptLease" ("partition") VALUES ${Prisma.join(values)} ON CONFLICT ("partition") DO NOTHING`,
    );
    this.seeded = true;
  }

  /** Leases the partitions of the oldest pending receipts that no one else holds. */
  private async lease(): Promise<number[]> {
    const now = this.now();
    const until = new Date(now.getTime() + (this.deps.leaseMs ?? 15_000));
    const n = this.deps.partitionsPerTurn ?? PARTITIONS / 2;
    const rows = await this.leaseStatement.run([
      this.processorId,
      rawTimestamp(this.deps.provider, until),
      rawTimestamp(this.deps.provider, now),
      n,
    ]);
    return rows.map((r) => Number(r.partition)).sort((a, b) => a - b);
  }

  /**
   * One turn on the leased partitions. A batch (across them, in arrival order) is read once and
   * worked through unit by unit (a compliance receipt is a unit of its own).
   */
  private async drainLeased(partitions: number[], turn: { released: boolean }): Promise<number> {
    let done = 0;
    const started = Date.now();
    const batchSize = this.deps.batchSize ?? 200;
    let queue: PendingReceipt[] = [];
    // a short batch is all there is: receipts stored meanwhile come with a wake-up of their own
    let last = false;
    // a turn of a few seconds (at least one unit), so other processes get the partitions in turn
    for (let first = true; !this.stopping && (first || Date.now() - started < (this.deps.turnMs ?? 5_000)); first = false) {
      if (queue.length === 0) {
        if (!last) queue = await this.deps.receipts.pending(partitions, batchSize);
        if (queue.length === 0) break;
        last = queue.length < batchSize;
      }
      const compliance = isSerial(queue[0]!.topic, queue[0]!.kind);
      const n = await this.processSafely(partitions, queue, last ? turn : undefined);
      done += n;
      // a backlog on SQLite would otherwise hold off requests, timers and the WAL checkpoint
      // thread's messages until it was drained
      await turnOfTheLoop();
      if (compliance) {
        // a redaction erases receipts after it: the rest is read again
        queue = [];
        last = false;
      } else queue = queue.slice(n);
    }
    return done;
  }

  /**
   * A unit that fails is tried again one receipt at a time, so one receipt the database refuses
   * (hostile content) cannot hold up the others. A receipt that fails alone twice with the same
   * error is recorded as rejected, with that error, and its body erased. An error that says the
   * database is away (db/unavailable.ts) is no receipt's fault: it goes to the loop, which waits
   * and tries the unit again, and nothing is rejected for it.
   */
  private async processSafely(partitions: number[], pending: PendingReceipt[], turn?: { released: boolean }): Promise<number> {
    try {
      return await this.processUnit(partitions, pending, turn);
    } catch (err) {
      if (err instanceof LeaseLost || isDatabaseUnavailable(err)) throw err;
      // a unit of one already was that receipt alone: its failure is the first of its tries
      if (pending.length === 1) {
        await this.processAlone(partitions, pending[0]!, (err as Error).message);
        return 1;
      }
    }
    const end = unitEnd(pending);
    for (let i = 0; i < end; i++) {
      if (this.stopping) return i;
      await this.processAlone(partitions, pending[i]!);
    }
    return end;
  }

  private async processAlone(partitions: number[], receipt: PendingReceipt, firstError: string | null = null): Promise<void> {
    let error: string | null = firstError;
    for (let tries = firstError === null ? 0 : 1; tries < 2; tries++) {
      try {
        await this.processUnit(partitions, [receipt]);
        return;
      } catch (err) {
        // the database away is not this receipt's fault: the loop waits it out, nothing is rejected
        if (err instanceof LeaseLost || isDatabaseUnavailable(err)) throw err;
        const message = (err as Error).message;
        if (error !== null && error !== message) throw err;
        error = message;
      }
    }
    const outcome: ReceiptOutcome = {
      id: receipt.id,
      outcome: 'rejected',
      reason: `could not be processed: ${describeError(error!)}`,
      messageCount: 0,
      customerId: null,
    };
    await this.deps.db.$transaction((tx) => this.deps.receipts.markProcessed(tx, [outcome], this.now()));
    this.deps.logger.error(
      { receiptId: receipt.id, topic: receipt.topic, err: outcome.reason },
      'a receipt could not be processed and was recorded as rejected',
    );
    this.count([outcome]);
  }

  /**
   * Processes the first unit of the pending receipts: a compliance receipt alone (it changes
   * what the receipts after it may see), or the run of ordinary receipts up to the next one.
   */
  private async processUnit(partitions: number[], pending: PendingReceipt[], turn?: { released: boolean }): Promise<number> {
    // only the unit is parsed: the receipts after it wait for units of their own. The loop turns
    // between parses once they have taken a while (a body of megabytes takes tens of ms)
    const budget = new LoopBudget();
    const unit: Parsed[] = [];
    for (const p of pending.slice(0, unitEnd(pending))) {
      unit.push(parse(p));
      await budget.step();
    }
    const gdpr = isSerial(pending[0]!.topic, pending[0]!.kind) ? unit[0]!.receipt : undefined;
    if (gdpr) {
      const res = await this.deps.gdpr.handle(gdpr);
      this.count([res.outcome]);
      if (res.due.length) this.deps.onDue(res.due);
      return 1;
    }
    const outcomes: ReceiptOutcome[] = [];
    const toForward: ParsedReceipt[] = [];
    const pixel: ParsedReceipt[] = [];
    // by the topic table (topics.ts); the privacy and lifecycle topics were units of their own above
    for (const p of unit) {
      const r = p.receipt;
      if (!r) {
        outcomes.push(p.rejected!);
        continue;
      }
      const handling = handlingOf(r.topic, p.kind);
      const side = handling === 'side_effect' ? this.deps.sideHandlers?.[r.topic as SideEffectTopic] : undefined;
      if (handling === 'storefront') {
        if (this.deps.pixel) pixel.push(r);
        else
          outcomes.push({
            id: r.id,
            outcome: 'ignored',
            reason: 'storefront events are not processed here',
            messageCount: 0,
            customerId: null,
          });
      } else if (side) {
        const done = await side(r);
        outcomes.push({ id: r.id, outcome: done.outcome, reason: done.reason ?? null, messageCount: 0, customerId: null });
      } else toForward.push(r);
    }
    const forwarded = toForward.length ? await this.deps.forward(toForward) : null;
    if (forwarded) outcomes.push(...forwarded.outcomes);
    // the storefront's batches, and the emails the unit's webhooks name (pending claims they vouch for)
    const pixelPlan = this.deps.pixel && (pixel.length || toForward.length) ? await this.deps.pixel(pixel, toForward) : null;
    if (pixelPlan) outcomes.push(...pixelPlan.outcomes);
    await budget.step();
    const now = this.now();
    // the last batch of a turn (all of the pending receipts) gives the lease up as it commits
    const release = turn !== undefined && unit.length === pending.length;
    await driverTransaction(
      this.deps.db,
      async (tx) => {
        const until = release ? null : this.sql.ts(new Date(now.getTime() + (this.deps.leaseMs ?? 15_000)));
        const owner = release ? null : this.processorId;
        const renewed = await tx.$executeRaw(Prisma.sql`
        UPDATE "ReceiptLease" SET "owner" = ${owner}, "leasedUntil" = ${until}
        WHERE "partition" IN (${Prisma.join(partitions.map((p) => this.sql.int(p)))}) AND "owner" = ${this.processorId}`);
        if (renewed !== partitions.length) throw new LeaseLost(`lost the lease on receipt partitions ${partitions.join(', ')}`);
        // storefront first: a shopper's adds come before their order, and the order's write
        // cancels the storefront abandonments of its email, those of this batch included
        if (pixelPlan) {
          await pixelPlan.write(tx, now);
          await lowerDue(tx, this.deps.provider, pixelPlan.due);
        }
        if (forwarded) {
          await this.deps.forwardStore.write(tx, forwarded.plan, now);
          await lowerDue(tx, this.deps.provider, forwarded.due);
        }
        const marked = await this.deps.receipts.markProcessed(tx, outcomes, now);
        // fewer than given: another processor did them meanwhile; give this batch up, nothing written
        if (marked !== outcomes.length) throw new LeaseLost(`receipts of partitions ${partitions.join(', ')} were processed elsewhere`);
        // a crash that loses this commit leaves its receipts pending, to be processed again the same
        // way, and nothing outside the database acts on it first: its messages are sent only after
        // a claim, whose durable commit flushes this one (db/transaction.ts)
      },
      { lazyCommit: true },
    );
    if (release) turn.released = true;
    this.count(outcomes);
    const due = [...(forwarded?.due ?? []), ...(pixelPlan?.due ?? [])];
    if (due.length) this.deps.onDue(due);
    return unit.length;
  }

  private count(outcomes: ReceiptOutcome[]): void {
    for (const o of outcomes) this.deps.metrics.receiptsProcessed.inc({ outcome: o.outcome });
  }

  /** Processed receipts past the dedupe window are deleted, about once an hour. */
  private async housekeeping(): Promise<void> {
    if (Date.now() - this.lastRetention < 3_600_000) return;
    this.lastRetention = Date.now();
    const cutoff = new Date(this.now().getTime() - (this.deps.retentionMs ?? 7 * 86_400_000));
    const deleted = await this.deps.receipts.deleteExpired(cutoff);
    if (deleted) this.deps.logger.info({ deleted }, 'deleted receipts past the dedupe window');
  }
}

/** The database's own words: Prisma puts them on the last line, after the call site. */
function describeError(message: string): string {
  return (
    message
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .pop()
      ?.slice(0, 200) ?? 'unknown error'
  );
}

interface Parsed {
  kind: string;
  receipt?: ParsedReceipt;
  rejected?: ReceiptOutcome;
}

/**
 * Raw bytes of the receipts one unit takes at most (one receipt always): a unit's transaction
 * writes its messages and erases its bodies in one synchronous step on SQLite, so a run of huge
 * payloads is cut into units of about this size, with a turn of the event loop between them.
 * Ordinary receipts (a few KB) fill a batch of 200 long before this.
 */
export const MAX_UNIT_BYTES = 1_048_576;

/**
 * How many receipts from the first make one unit: a compliance receipt alone, else the run up to
 * the next one, cut where the bodies pass MAX_UNIT_BYTES.
 */
function unitEnd(pending: PendingReceipt[]): number {
  if (pending.length === 0 || isSerial(pending[0]!.topic, pending[0]!.kind)) return Math.min(1, pending.length);
  let bytes = 0;
  for (let i = 0; i < pending.length; i++) {
    const p = pending[i]!;
    if (isSerial(p.topic, p.kind)) return i;
    bytes += p.body?.length ?? 0;
    if (bytes > MAX_UNIT_BYTES) return Math.max(1, i);
  }
  return pending.length;
}

function parse(p: PendingReceipt): Parsed {
  try {
    const payload = parseWebhookBody(p.body ?? '');
    return {
      kind: p.kind,
      receipt: {
        id: p.id,
        webhookId: p.webhookId,
        shopDomain: p.shopDomain,
        topic: p.topic,
        receivedAt: p.receivedAt,
        triggeredAt: p.triggeredAt,
        payload,
      },
    };
  } catch {
    return { kind: p.kind, rejected: { id: p.id, outcome: 'rejected', reason: 'the body is not JSON', messageCount: 0, customerId: null } };
  }
}
