// Per-workspace pacing, shared by every process on the database. Each workspace has a row
// holding the next free send slot; reserving n slots is one atomic UPDATE ... RETURNING, so
// two processes can never hand out the same slot. Slots are spaced (1000 + guard) / limit ms
// apart: with the guard, arrival jitter of up to `guardMs` cannot put limit + 1 requests into
// one sliding second at the service.
import { Prisma } from '@prisma/client';
import type { RateInfo } from '../service/types';
import type { Db, DbProvider } from '../db/client';
import { Sql } from './sql';

export const DEFAULT_LIMIT = 10;
export const DEFAULT_GUARD_MS = 40;

export interface PacerOptions {
  guardMs?: number;
  now?: () => number;
}

export class Pacer {
  private readonly sql: Sql;
  private readonly guardMs: number;
  private readonly now: () => number;
  /** This process's own recent sends per workspace, to tell our usage from someone else's. */
  private readonly recent = new Map<string, number[]>();

  constructor(db: Db, provider: DbProvider, opts: PacerOptions = {}) {
    this.sql = new Sql(db, provider);
    this.guardMs = opts.guardMs ?? DEFAULT_GUARD_MS;
    this.now = opts.now ?? Date.now;
  }

  /** How late a slot may still be used: half the guard, so lateness stays inside it. */
  get lateToleranceMs(): number {
    return this.guardMs / 2;
  }

  intervalMs(limit: number): number {
    return (1000 + this.guardMs) / Math.max(1, limit);
  }

  /** Reserves `count` consecutive send slots; returns their start times (epoch ms). */
  async reserve(workspaceId: string, count: number): Promise<{ slots: number[]; limit: number }> {
    const now = this.now();
    await this.ensureRow(workspaceId);
    const greatest = Prisma.raw(this.sql.provider === 'postgres' ? 'GREATEST' : 'MAX');
    const int = (n: number) => this.sql.int(n);
    // integer arithmetic on both providers: span = ceil(count * (1000 + guard) / limit)
    const rows = await this.sql.query<{ nextSlotAt: bigint | number; limitPerSec: number }>(Prisma.sql`
      UPDATE "WorkspacePacer"
      SET "nextSlotAt" = ${greatest}("nextSlotAt", ${int(now)}) + ((${int(count)} * (1000 + ${int(Math.round(this.guardMs))}) + "limitPerSec" - 1) / "limitPerSec")
      WHERE "workspaceId" = ${workspaceId} RETURNING "nextSlotAt", "limitPerSec"`);
    const row = rows[0]!;
    const limit = Number(row.limitPerSec);
    const spanMs = Math.floor((count * (1000 + Math.round(this.guardMs)) + limit - 1) / limit);
    const start = Number(row.nextSlotAt) - spanMs;
    return { slots: Array.from({ length: count }, (_, i) => start + Math.round((i * spanMs) / count)), limit };
  }

  /**
   * Takes one slot for a call that is not a delivery (key check, lists, custom fields): the
   * service counts every request against the team's limit, so these must fit the schedule too.
   * Waits for the slot, at most `maxWaitMs`.
   */
  async take(workspaceId: string, maxWaitMs = 5_000): Promise<void> {
    const { slots } = await this.reserve(workspaceId, 1);
    const wait = Math.min(maxWaitMs, slots[0]! - this.now());
    this.noteSend(workspaceId, Math.max(slots[0]!, this.now()));
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }

  private readonly known = new Set<string>();
  private async ensureRow(workspaceId: string): Promise<void> {
    if (this.known.has(workspaceId)) return;
    // several processes may meet a new workspace at once: insert-if-absent, never a race
    await this.sql.query(Prisma.sql`
      INSERT INTO "WorkspacePacer" ("workspaceId", "limitPerSec", "nextSlotAt", "updatedAt")
      VALUES (${workspaceId}, ${this.sql.int(DEFAULT_LIMIT)}, ${this.sql.int(0)}, ${this.sql.ts(new Date(this.now()))})
      ON CONFLICT ("workspaceId") DO NOTHING RETURNING "workspaceId"`);
    this.known.add(workspaceId);
  }

  /** Records a send made by this process, for telling our usage from others'. */
  noteSend(workspaceId: string, at: number): void {
    const list = this.recent.get(workspaceId) ?? [];
    list.push(at);
    while (list.length && list[0]! <= at - 1000) list.shift();
    this.recent.set(workspaceId, list);
  }

  /**
   * Learns from a response: follows x-ratelimit-limit, backs off after a 429, and slows down
   * when x-ratelimit-remaining is lower than our own sends explain (someone else is using the
   * workspace's quota, e.g. another integration on the same team).
   */
  async observe(workspaceId: string, rate: RateInfo, rateLimited: boolean, retryAfterMs?: number): Promise<void> {
    const now = this.now();
    const db = this.sql.db;
    if (rate.limit && rate.limit > 0 && this.limits.get(workspaceId) !== rate.limit) {
      await db.workspacePacer.updateMany({ where: { workspaceId }, data: { limitPerSec: rate.limit } });
      this.limits.set(workspaceId, rate.limit);
    }
    let pushTo: number | null = null;
    if (rateLimited) pushTo = now + Math.max(retryAfterMs ?? 1000, 1000);
    else if (rate.remaining !== undefined && rate.limit) {
      const ours = (this.recent.get(workspaceId) ?? []).filter((t) => t > now - 1000).length;
      const external = rate.limit - rate.remaining - ours;
      if (external > 0) pushTo = now + Math.ceil(external * this.intervalMs(rate.limit));
    }
    if (pushTo !== null) {
      await db.workspacePacer.updateMany({ where: { workspaceId, nextSlotAt: { lt: BigInt(pushTo) } }, data: { nextSlotAt: BigInt(pushTo) } });
    }
  }

  /** The limit this process last saw reported per workspace, to write it only when it changes. */
  private readonly limits = new Map<string, number>();

  /** Pauses a workspace the service has blocked (403); every process honours it. */
  async pause(workspaceId: string, until: Date, reason: string): Promise<void> {
    await this.ensureRow(workspaceId);
    await this.sql.db.workspacePacer.update({ where: { workspaceId }, data: { pausedUntil: until, pauseReason: reason } });
  }

  /** The workspace's limit and any pause still in force, in one read (the worker asks per batch). */
  async state(workspaceId: string): Promise<{ limit: number; pausedUntil: Date | null }> {
    const row = await this.sql.db.workspacePacer.findUnique({ where: { workspaceId }, select: { limitPerSec: true, pausedUntil: true } });
    const until = row?.pausedUntil ?? null;
    return { limit: row?.limitPerSec ?? DEFAULT_LIMIT, pausedUntil: until && until.getTime() > this.now() ? until : null };
  }

  async pausedUntil(workspaceId: string): Promise<Date | null> {
    return (await this.state(workspaceId)).pausedUntil;
  }
}
