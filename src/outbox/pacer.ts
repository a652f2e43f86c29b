// Per-workspace pacing, shared by every process on the database, checked at the moment a
// request leaves. Each workspace row holds `nextSendUs`: no request may leave before it. Taking
// a send is one atomic UPDATE ... RETURNING that succeeds only once that time has passed and
// moves it one interval on, so every process sharing the database spaces its requests
// (1000 + guard) / limit ms apart: never more than `limit` in any sliding second.
//
// A send can leave later than its take: the answer comes back late (a busy event loop), or the
// request waits for a connection. Either way the next send is moved to one interval after the
// moment it really left, as long as no one has taken a send since (takeSend, sent()); when
// someone has, a late answer is given up and taken again. So no send is fired late into a window
// that is already full.
import { randomUUID } from 'node:crypto';
import { Prisma } from '@prisma/client';
import { perRowCall } from '../db/group-commit';
import type { RateInfo } from '../integrations/service/types';
import { rawOf, type Db, type DbProvider } from '../db/client';
import { prepare, rawDate, rawTimestamp, runRows, type RawStatement } from '../db/raw';
import type { ClassIndex, Usage } from './classes';
import { clamp, RETRY_AFTER_MAX_MS } from './retry-policy';
import { ENSURE, RECORD, REANCHOR, SET_LIMIT, TAKE, usageOf, type TakeRow } from './sql/pacer';
import { Sql } from '../db/sql';

// A send time lost in a crash of the database costs at most one early send after it (a 429 is
// handled), so the pacer's writes do not wait for the WAL flush (db/raw.ts lazyCommit). Their
// commits are visible to every process at once, which is what the limit rests on.
const LAZY = { lazyCommit: true } as const;

/** How many times a late take is moved before it is given up. */
const MAX_REANCHORS = 2;

export const DEFAULT_LIMIT = 10;
/** Room for the jitter between a request leaving and the service counting it. */
export const DEFAULT_GUARD_MS = 40;
/**
 * How far a take may catch up with a send time already passed (so the round trip of the take
 * itself does not stretch every interval), and how late its answer may come back and still be
 * used. Together well inside the guard: any `limit + 1` consecutive requests span at least
 * 1000 + guard - 2 * tolerance ms.
 */
export const DEFAULT_TOLERANCE_MS = 10;

/** What the pacer reports for /metrics (connector_pacer_events_total). */
export type PacerEvent = 'sent' | 'late' | 'moved' | 'crowded' | 'slowed' | 'rate_limited';

export interface PacerOptions {
  guardMs?: number;
  toleranceMs?: number;
  now?: () => number;
  onEvent?: (event: PacerEvent) => void;
}

/** ok: the send was taken at `at` (epoch ms), under `token`; `usage` is the workspace's per class after it. */
export type Take =
  { ok: true; limit: number; token: string; at: number; usage: Usage } | { ok: false; retryAt: number; pausedUntil: Date | null };

/**
 * ok: send now (the turn is spaced from `at`; pass it to sent()); `usage` is the workspace's per
 * class after this send. busy: no send free before `until` (epoch ms). paused: the service blocks
 * the workspace.
 */
export type TakeSend =
  | { kind: 'ok'; at: number; token: string; usage: Usage }
  | { kind: 'busy'; until: number }
  | { kind: 'paused'; until: Date }
  | { kind: 'stopped' };

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

export class Pacer {
  private readonly sql: Sql;
  readonly guardMs: number;
  readonly toleranceMs: number;
  /** (1000 + guard) × 1000: one second and the guard, in µs, which the statements divide by the limit. */
  private readonly perSendUs: number;
  private readonly now: () => number;
  private readonly onEvent: (event: PacerEvent) => void;
  /** This process's own recent sends per workspace, to tell our usage from someone else's. */
  private readonly recent = new Map<string, number[]>();
  /** Every process's takes per workspace, per second, as this process's last take saw them. */
  private readonly shared = new Map<string, { second: number; current: number; last: number }>();
  /** The limit this process last saw reported per workspace, to write it only when it changes. */
  private readonly limits = new Map<string, number>();
  private readonly known = new Set<string>();
  /** A take's token: this pacer's random prefix and a count, unique among every process's takes (no random bytes drawn on every send's path). */
  private readonly tokenPrefix = `${randomUUID().slice(0, 13)}-`;
  private takesMade = 0;

  private readonly provider: DbProvider;
  private readonly takeStatement: RawStatement<TakeRow>;
  private readonly reanchorStatement: RawStatement<{ workspaceId: string }>;
  /** A take and a move: on PostgreSQL those of concurrent lanes share one statement. */
  private readonly takeOne: (take: { workspaceId: string; token: string; cls: number }) => Promise<{ row?: TakeRow; nowMs: number }>;
  private readonly moveOne: (move: { workspaceId: string; token: string; at: () => number }) => Promise<boolean>;
  private readonly ensureStatement: RawStatement<{ limitPerSec: number }>;
  private readonly setLimitStatement: RawStatement<never>;
  private readonly recordStatement: RawStatement<never>;

  constructor(db: Db, provider: DbProvider, opts: PacerOptions = {}) {
    this.sql = new Sql(db, provider);
    this.provider = provider;
    this.takeStatement = prepare<TakeRow>(rawOf(db), 'pacer_take', TAKE, LAZY);
    this.reanchorStatement = prepare(rawOf(db), 'pacer_reanchor', REANCHOR, LAZY);
    this.ensureStatement = prepare(rawOf(db), 'pacer_ensure', ENSURE, LAZY);
    this.setLimitStatement = prepare(rawOf(db), 'pacer_set_limit', SET_LIMIT, LAZY);
    this.recordStatement = prepare(rawOf(db), 'pacer_record', RECORD, LAZY);
    this.takeOne = perRowCall(provider, { key: (t) => t.workspaceId, run: (takes) => this.runTakes(takes) });
    this.moveOne = perRowCall(provider, { key: (m) => m.workspaceId, run: (moves) => this.runMoves(moves) });
    this.guardMs = opts.guardMs ?? DEFAULT_GUARD_MS;
    this.toleranceMs = opts.toleranceMs ?? DEFAULT_TOLERANCE_MS;
    this.perSendUs = (1000 + Math.round(this.guardMs)) * 1000;
    this.now = opts.now ?? Date.now;
    this.onEvent = opts.onEvent ?? (() => undefined);
  }

  intervalMs(limit: number): number {
    return (1000 + this.guardMs) / Math.max(1, limit);
  }

  private int(n: number | bigint): Prisma.Sql {
    return this.sql.int(Number(n));
  }

  /**
   * One attempt at the workspace's next send, in one statement: ok when the send time has passed
   * and the workspace is not paused (it then moves one interval on); otherwise retryAt says
   * when to try again (epoch ms), and pausedUntil is set while the service blocks the workspace.
   */
  async tryTake(workspaceId: string, cls: ClassIndex | -1 = -1): Promise<Take> {
    await this.ensureRow(workspaceId);
    const token = `${this.tokenPrefix}${(this.takesMade++).toString(36)}`;
    const { row, nowMs } = await this.takeOne({ workspaceId, token, cls });
    if (!row) {
      // the row went with its last shop (shop/redact): create it again on the next try
      this.known.delete(workspaceId);
      return { ok: false, retryAt: nowMs + 1, pausedUntil: null };
    }
    if (row.takenBy === token) {
      this.shared.set(workspaceId, {
        second: Number(row.takeSecond),
        current: Number(row.takesThisSecond),
        last: Number(row.takesLastSecond),
      });
      return { ok: true, limit: Number(row.limitPerSec), token, at: nowMs, usage: usageOf(row) };
    }
    const paused = rawDate(row.pausedUntil);
    const pausedUntil = paused && paused.getTime() > nowMs ? paused : null;
    const next = Math.ceil(Number(row.nextSendUs) / 1000);
    return { ok: false, retryAt: Math.max(next, pausedUntil?.getTime() ?? 0, nowMs + 1), pausedUntil };
  }

  /**
   * Waits for and takes the workspace's next send. A take whose answer comes back later than the
   * tolerance (a busy event loop, a wait for a connection) is moved to the moment it is really
   * used, if no one has taken a send since; otherwise it is given up and the caller takes again.
   * Either way the request cannot land in a window that is already full.
   * Says 'paused' while the service blocks the workspace, 'busy' when no send is free within
   * maxWaitMs (with when one is), and 'stopped' when shouldStop() turns true while waiting.
   */
  async takeSend(
    workspaceId: string,
    opts: { maxWaitMs?: number; shouldStop?: () => boolean; wait?: (ms: number) => Promise<void>; cls?: ClassIndex } = {},
  ): Promise<TakeSend> {
    const deadline = opts.maxWaitMs === undefined ? Infinity : this.now() + opts.maxWaitMs;
    const wait = opts.wait ?? sleep;
    for (;;) {
      if (opts.shouldStop?.()) return { kind: 'stopped' };
      const t = await this.tryTake(workspaceId, opts.cls ?? -1);
      if (t.ok) {
        const at = await this.onTime(workspaceId, t.token, t.at);
        if (at !== null) {
          this.noteSend(workspaceId, this.now());
          this.onEvent('sent');
          return { kind: 'ok', at, token: t.token, usage: t.usage };
        }
        this.onEvent('late');
        continue;
      }
      if (t.pausedUntil) return { kind: 'paused', until: t.pausedUntil };
      if (t.retryAt > deadline) return { kind: 'busy', until: t.retryAt };
      await wait(t.retryAt - this.now());
    }
  }

  /**
   * Whether a send taken at `at` may leave now, and the time the next send is spaced from; null
   * if not. Answered within the tolerance: yes. Answered late: the workspace's next send is
   * moved to one interval after now, in one statement that holds only while no one has taken a
   * send since (so none can have left after ours); a move answered late is tried again, twice at
   * most.
   */
  private async onTime(workspaceId: string, token: string, at: number): Promise<number | null> {
    let moves = 0;
    for (; this.now() - at > this.toleranceMs; moves++) {
      if (moves === MAX_REANCHORS) return null;
      if (!(await this.moveNext(workspaceId, token, () => (at = this.now())))) return null;
    }
    if (moves > 0) this.onEvent('moved');
    return at;
  }

  /**
   * After the request of a take has been written to its connection at `at` (epoch ms): if that
   * was later than the tolerance after the take (a connection had to be opened, the event loop
   * was busy), the workspace's next send moves to one interval after `at`, so the sends after
   * it are spaced from when it really left. Call it before this lane takes again.
   */
  async sent(workspaceId: string, take: { token: string; at: number }, at: number): Promise<void> {
    if (at - take.at <= this.toleranceMs) return;
    // no row back: someone took the next send before this one had left, the one case in which
    // two requests may leave closer together than the interval (counted, for /metrics)
    this.onEvent((await this.moveNext(workspaceId, take.token, () => at)) ? 'moved' : 'crowded');
  }

  /** Moves the next send to one interval after `at()` (read once the statement has its connection), while `token` holds the last take. */
  private moveNext(workspaceId: string, token: string, at: () => number): Promise<boolean> {
    return this.moveOne({ workspaceId, token, at });
  }

  /**
   * Takes, one per workspace, in one statement; the time of all of them is read once the
   * statement has its connection (a wait for the SQLite lock or a pool client does not count
   * against the tolerance, only the answer's way back does). SQLite: one take.
   */
  private async runTakes(
    takes: Array<{ workspaceId: string; token: string; cls: number }>,
  ): Promise<Array<{ row?: TakeRow; nowMs: number }>> {
    let nowMs = 0;
    const rows = await runRows(this.takeStatement, this.provider, () => {
      nowMs = this.now();
      const now = [Math.round(nowMs * 1000), rawTimestamp(this.provider, new Date(nowMs)), this.toleranceMs * 1000, this.perSendUs];
      return takes.map((t) => [...now, t.token, t.workspaceId, t.cls]);
    });
    const byWorkspace = new Map(rows.map((r) => [r.workspaceId, r]));
    return takes.map((t) => ({ row: byWorkspace.get(t.workspaceId), nowMs }));
  }

  /** Moves, one per workspace, in one statement (SQLite: one); whether each still held its take. */
  private async runMoves(moves: Array<{ workspaceId: string; token: string; at: () => number }>): Promise<boolean[]> {
    const rows = await runRows(this.reanchorStatement, this.provider, () =>
      moves.map((m) => [Math.round(m.at() * 1000), this.toleranceMs * 1000, this.perSendUs, m.workspaceId, m.token]),
    );
    const moved = new Set(rows.map((r) => r.workspaceId));
    return moves.map((m) => moved.has(m.workspaceId));
  }

  /** For calls that are not deliveries (key checks, lists): waits for a send, at most maxWaitMs. */
  async take(workspaceId: string, maxWaitMs = 10_000): Promise<TakeSend['kind']> {
    return (await this.takeSend(workspaceId, { maxWaitMs })).kind;
  }

  /**
   * Counts a request already made to a workspace the caller could not know beforehand (the key
   * validation, which tells the workspace): the next send waits one interval after it.
   */
  async record(workspaceId: string): Promise<void> {
    await this.ensureRow(workspaceId);
    const nowMs = this.now();
    await this.recordStatement.run([Math.round(nowMs * 1000), this.perSendUs, workspaceId]);
    this.noteSend(workspaceId, nowMs);
  }

  /**
   * What a read of the workspace's row told the caller (the worker reads it with the shop's
   * connection): the row exists, with this limit. Spares the insert-if-absent before the first
   * take and a write of a reported limit that is already there.
   */
  knownRow(workspaceId: string, limit: number): void {
    this.known.add(workspaceId);
    this.limits.set(workspaceId, limit);
  }

  private async ensureRow(workspaceId: string): Promise<void> {
    if (this.known.has(workspaceId)) return;
    // several processes may meet a new workspace at once: insert-if-absent, never a race; the
    // row made here has the default limit, so a response that reports it writes nothing
    const made = await this.ensureStatement.run([workspaceId, DEFAULT_LIMIT, rawTimestamp(this.provider, new Date(this.now()))]);
    if (made.length === 1) this.limits.set(workspaceId, DEFAULT_LIMIT);
    this.known.add(workspaceId);
  }

  /**
   * The workspace's takes by every process in the second before `at` (epoch ms), from the counts
   * of whole seconds the last take returned: those of `at`'s second, and the part of the second
   * before it that the sliding window still covers. Our processes' requests, not another
   * integration's.
   */
  private sharedTakes(workspaceId: string, at: number): number {
    const s = this.shared.get(workspaceId);
    if (!s) return 0;
    const second = Math.floor(at / 1000);
    const covered = 1 - (at % 1000) / 1000 + this.guardMs / 1000;
    if (s.second === second) return Math.ceil(s.current + s.last * Math.min(1, covered));
    if (s.second === second - 1) return Math.ceil(s.current * Math.min(1, covered));
    return 0;
  }

  /** Records a send made by this process, for telling our usage from others'. */
  private noteSend(workspaceId: string, at: number): void {
    const list = this.recent.get(workspaceId) ?? [];
    list.push(at);
    while (list.length && list[0]! <= at - 1000) list.shift();
    this.recent.set(workspaceId, list);
  }

  /**
   * Learns from a response: follows x-ratelimit-limit, backs off after a 429, and slows down
   * when x-ratelimit-remaining is lower than our own sends explain (someone else is using the
   * workspace's quota, e.g. another integration on the same team). `sentAt`: when the request
   * answered was taken (default: now).
   */
  async observe(workspaceId: string, rate: RateInfo, rateLimited: boolean, retryAfterMs?: number, sentAt?: number): Promise<void> {
    const now = this.now();
    const db = this.sql.db;
    if (rate.limit && rate.limit > 0 && this.limits.get(workspaceId) !== rate.limit) {
      await this.setLimitStatement.run([rate.limit, rawTimestamp(this.provider, new Date(now)), workspaceId]);
      this.limits.set(workspaceId, rate.limit);
    }
    let pushTo: number | null = null;
    // within the retry policy's bounds, so a bad Retry-After neither hammers nor stalls us
    if (rateLimited) {
      pushTo = now + clamp(retryAfterMs ?? 1000, 1000, RETRY_AFTER_MAX_MS);
      this.onEvent('rate_limited');
    } else if (rate.remaining !== undefined && rate.limit) {
      // Ours that the service may have counted in the second before this request reached it:
      // those sent up to it and less than a second (plus the jitter guard) before it. Counted
      // back from the answer, some the service still counted would be missed, taken for someone
      // else's, and sends slowed down for nothing.
      const upTo = sentAt ?? now;
      const ours = Math.max(
        (this.recent.get(workspaceId) ?? []).filter((t) => t <= upTo && t > upTo - 1000 - this.guardMs).length,
        this.sharedTakes(workspaceId, upTo),
      );
      const external = rate.limit - rate.remaining - ours;
      if (external > 0) {
        pushTo = now + Math.ceil(external * this.intervalMs(rate.limit));
        this.onEvent('slowed');
      }
    }
    if (pushTo !== null) {
      const us = BigInt(Math.round(pushTo * 1000));
      await db.workspacePacer.updateMany({ where: { workspaceId, nextSendUs: { lt: us } }, data: { nextSendUs: us } });
    }
  }

  /** Pauses a workspace the service has blocked (403); every process honours it. */
  async pause(workspaceId: string, until: Date, reason: string): Promise<void> {
    await this.ensureRow(workspaceId);
    await this.sql.db.workspacePacer.update({ where: { workspaceId }, data: { pausedUntil: until, pauseReason: reason } });
  }

  /** When the workspace's next send is free (a pause included), epoch ms. */
  async nextFree(workspaceId: string): Promise<number> {
    const row = await this.sql.db.workspacePacer.findUnique({ where: { workspaceId }, select: { nextSendUs: true, pausedUntil: true } });
    return Math.max(Math.ceil(Number(row?.nextSendUs ?? 0) / 1000), row?.pausedUntil?.getTime() ?? 0);
  }

  /** The workspace's limit, any pause still in force, and its usage per class, in one read. */
  async state(workspaceId: string): Promise<{ limit: number; pausedUntil: Date | null; usage: Usage }> {
    const row = await this.sql.db.workspacePacer.findUnique({
      where: { workspaceId },
      select: { limitPerSec: true, pausedUntil: true, usageCritical: true, usageTriggers: true, usageBehaviour: true, usageHistory: true },
    });
    const until = row?.pausedUntil ?? null;
    return {
      limit: row?.limitPerSec ?? DEFAULT_LIMIT,
      pausedUntil: until && until.getTime() > this.now() ? until : null,
      usage: usageOf(row),
    };
  }
}
