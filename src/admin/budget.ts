// The workspace's delivery budget as the merchant sees it: the limit, what each delivery class
// sent in the last hour and has waiting, when that will be drained, what expired, and which
// events spent the budget over the last 7 days; with warnings that say why work waits and what
// helps. The budget belongs to the workspace, so every figure sums over the shops connected to
// it.
//
// Cost: waiting work is counted through the (status, shopId, deliveryClass, runAt, id) index
// (an index-only range per shop); the oldest due message of a class is read among the first
// OLDEST_SAMPLE of its queue; history comes from DeliveryUsage's hourly rows. No query reads a
// shop's message history.
import { Prisma } from '@prisma/client';
import type { Db, DbProvider } from '../db/client';
import { DEFAULT_CLASS_POLICY, DELIVERY_CLASSES, floorsOf, type ClassIndex, type ClassPolicy, type DeliveryClass } from '../outbox/classes';
import { DEFAULT_LIMIT } from '../outbox/pacer';
import { rawDate } from '../db/raw';
import { Sql } from '../db/sql';
import { EVENT_NAMES } from '../settings/settings';

const HOUR_MS = 3_600_000;
/** The due messages read per shop and class for the oldest one: the head of the queue, in claim order. */
export const OLDEST_SAMPLE = 100;
/** Critical work waiting longer than this is worth a banner. */
export const CRITICAL_WAIT_WARN_S = 60;
/** Events named in a warning as the first to switch off. */
const TOP_EVENTS_NAMED = 3;

export interface ClassBudget {
  class: DeliveryClass;
  /** The class's floor share of the sends while it has due work (critical's is unused: 0). */
  floor: number;
  /** How long past due a message of the class stays worth sending; null: always. */
  max_age_s: number | null;
  /** Requests sent in the last hour (the current hour's count plus the elapsed part's share of the previous hour's). */
  sent_1h: number;
  /** Due now and waiting for the budget. */
  queued: number;
  /** Queued for later (an abandonment's delay, a retry's backoff): not backlog. */
  scheduled: number;
  /** Since the oldest due message became due; 0 when nothing is due. */
  oldest_queued_age_s: number;
  /** Expired unsent, in the hours overlapping the last 24. */
  expired_24h: number;
  /** Estimated seconds until the class's due work is sent (see drainEtaS). */
  drain_eta_s: number;
}

export interface EventBudget {
  event_name: string;
  class: DeliveryClass;
  sends: number;
  /** sends ÷ the workspace's sends over the same 7 days (0..1). */
  share: number;
  expired: number;
}

export type BudgetWarningCode = 'critical_waiting' | 'behaviour_expiring';

export interface BudgetView {
  limit_per_sec: number;
  shops_in_workspace: number;
  classes: ClassBudget[];
  events_7d: EventBudget[];
  warnings: Array<{ code: BudgetWarningCode; message: string }>;
}

export interface BudgetDeps {
  db: Db;
  now?: () => Date;
  policy?: ClassPolicy;
}

/**
 * When a class's due work is sent, in seconds: it goes after the classes above it, but never
 * slower than its floor share allows, so min(due of this class and those above ÷ limit,
 * due of this class ÷ (limit × floor)). An estimate: it assumes nothing new arrives and the
 * service answers every request.
 */
export function drainEtaS(due: readonly number[], c: ClassIndex, limit: number, floor: number): number {
  const own = due[c] ?? 0;
  if (own === 0 || limit <= 0) return 0;
  const ahead = due.slice(0, c + 1).reduce((a, b) => a + b, 0) / limit;
  const byFloor = floor > 0 ? own / (limit * floor) : Infinity;
  return Math.ceil(Math.min(ahead, byFloor));
}

function duration(s: number): string {
  if (s < 90) return `${Math.max(1, Math.round(s))} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  const h = Math.floor(s / 3600);
  const m = Math.round((s - h * 3600) / 60);
  return m ? `${h} h ${m} min` : `${h} h`;
}

const humanize = (name: string) => `${name.charAt(0).toUpperCase()}${name.slice(1).replace(/_/g, ' ')}`;
const SWITCHABLE = new Set<string>(EVENT_NAMES);

/** "what helps", naming the events the merchant could switch off first. */
function whatHelps(events: EventBudget[]): string {
  const top = events.filter((e) => SWITCHABLE.has(e.event_name) && e.class !== 'critical' && e.sends > 0).slice(0, TOP_EVENTS_NAMED);
  const named = top.length
    ? ` (the most sent: ${top.map((e) => `${humanize(e.event_name)}, ${Math.round(e.share * 100)}%`).join('; ')} of the last 7 days’ sends)`
    : '';
  return `What helps: switch off the events no workflow of yours uses, in the Events card${named}; or ask your email provider for a higher limit (the app follows a raised limit by itself).`;
}

function warningsOf(view: Omit<BudgetView, 'warnings'>): BudgetView['warnings'] {
  const out: BudgetView['warnings'] = [];
  const limit = `${view.limit_per_sec} request${view.limit_per_sec === 1 ? '' : 's'} a second${view.shops_in_workspace > 1 ? `, shared by the ${view.shops_in_workspace} shops of this workspace` : ''}`;
  const critical = view.classes[0]!;
  if (critical.oldest_queued_age_s > CRITICAL_WAIT_WARN_S) {
    out.push({
      code: 'critical_waiting',
      message: `Critical events (orders, refunds, shipping, privacy) have waited ${duration(critical.oldest_queued_age_s)} to be sent: ${critical.queued} ${critical.queued === 1 ? 'is' : 'are'} due, and at the workspace’s limit of ${limit} they take about ${duration(critical.drain_eta_s)}. ${whatHelps(view.events_7d)}`,
    });
  }
  const expiring = view.classes.filter((c) => (c.class === 'behaviour' || c.class === 'triggers') && c.expired_24h > 0);
  if (expiring.length) {
    const n = expiring.reduce((a, c) => a + c.expired_24h, 0);
    const what = expiring.map((c) => (c.class === 'behaviour' ? 'storefront events' : 'workflow triggers')).join(' and ');
    out.push({
      code: 'behaviour_expiring',
      message: `${n} ${what} expired unsent in the last 24 hours: the workspace’s limit of ${limit} went to more important events first, and a day late they are no longer worth sending. ${whatHelps(view.events_7d)}`,
    });
  }
  return out;
}

export function createBudget(deps: BudgetDeps) {
  const { db } = deps;
  const now = deps.now ?? (() => new Date());
  const policy = deps.policy ?? DEFAULT_CLASS_POLICY;
  const floors = floorsOf(policy);

  /** The shops sharing the shop's workspace (the shop alone when it has no connection). */
  async function workspaceOf(shopId: string): Promise<{ workspaceId: string | null; shopIds: string[] }> {
    const own = await db.connection.findUnique({ where: { shopId }, select: { workspaceId: true } });
    if (!own) return { workspaceId: null, shopIds: [shopId] };
    const rows = await db.connection.findMany({
      where: { workspaceId: own.workspaceId },
      select: { shopId: true },
      orderBy: { shopId: 'asc' },
    });
    return { workspaceId: own.workspaceId, shopIds: rows.map((r) => r.shopId) };
  }

  /** The oldest dueAt among the first OLDEST_SAMPLE due messages of a shop's class, in claim order. */
  async function oldestDue(shopId: string, cls: number, t: Date): Promise<number | null> {
    const head = await db.outboxMessage.findMany({
      where: { status: 'queued', shopId, deliveryClass: cls, runAt: { lte: t } },
      orderBy: [{ runAt: 'asc' }, { id: 'asc' }],
      take: OLDEST_SAMPLE,
      select: { dueAt: true },
    });
    return head.length ? Math.min(...head.map((m) => m.dueAt.getTime())) : null;
  }

  return {
    async view(shopId: string): Promise<BudgetView> {
      const t = now();
      const thisHour = Math.floor(t.getTime() / HOUR_MS) * HOUR_MS;
      const { workspaceId, shopIds } = await workspaceOf(shopId);
      const shops = { in: shopIds };
      const [pacer, dueRows, laterRows, recent, week] = await Promise.all([
        workspaceId ? db.workspacePacer.findUnique({ where: { workspaceId }, select: { limitPerSec: true } }) : null,
        db.outboxMessage.groupBy({
          by: ['shopId', 'deliveryClass'],
          where: { status: 'queued', shopId: shops, runAt: { lte: t } },
          _count: { _all: true },
        }),
        db.outboxMessage.groupBy({
          by: ['deliveryClass'],
          where: { status: 'queued', shopId: shops, runAt: { gt: t } },
          _count: { _all: true },
        }),
        // the hours overlapping the last 24 (the oldest of them started 24 h before this one)
        db.deliveryUsage.groupBy({
          by: ['hour', 'deliveryClass'],
          where: { shopId: shops, hour: { gte: new Date(thisHour - 24 * HOUR_MS) } },
          _sum: { sends: true, expired: true },
        }),
        db.deliveryUsage.groupBy({
          by: ['eventName', 'deliveryClass'],
          where: { shopId: shops, hour: { gte: new Date(thisHour - 7 * 24 * HOUR_MS) } },
          _sum: { sends: true, expired: true },
        }),
      ]);
      const limit = pacer?.limitPerSec ?? DEFAULT_LIMIT;

      const due = [0, 0, 0, 0];
      for (const r of dueRows) due[r.deliveryClass] = (due[r.deliveryClass] ?? 0) + r._count._all;
      const oldest = await Promise.all(
        dueRows.map((r) => oldestDue(r.shopId, r.deliveryClass, t).then((at) => ({ cls: r.deliveryClass, at }))),
      );

      // the last hour: this hour's sends, plus the part of the previous hour still inside the window
      const previousShare = 1 - (t.getTime() - thisHour) / HOUR_MS;
      const sent1h = [0, 0, 0, 0];
      const expired24h = [0, 0, 0, 0];
      for (const r of recent) {
        const h = r.hour.getTime();
        const sends = r._sum.sends ?? 0;
        if (h >= thisHour) sent1h[r.deliveryClass] = (sent1h[r.deliveryClass] ?? 0) + sends;
        else if (h === thisHour - HOUR_MS) sent1h[r.deliveryClass] = (sent1h[r.deliveryClass] ?? 0) + sends * previousShare;
        expired24h[r.deliveryClass] = (expired24h[r.deliveryClass] ?? 0) + (r._sum.expired ?? 0);
      }

      const classes: ClassBudget[] = DELIVERY_CLASSES.map((name, c) => {
        const maxAge = policy.maxAgeMs[name];
        const at = oldest.filter((o) => o.cls === c && o.at !== null).map((o) => o.at!);
        return {
          class: name,
          floor: floors[c] ?? 0,
          max_age_s: maxAge === null ? null : Math.round(maxAge / 1000),
          sent_1h: Math.round(sent1h[c] ?? 0),
          queued: due[c] ?? 0,
          scheduled: laterRows.find((r) => r.deliveryClass === c)?._count._all ?? 0,
          oldest_queued_age_s: at.length ? Math.max(0, Math.round((t.getTime() - Math.min(...at)) / 1000)) : 0,
          expired_24h: expired24h[c] ?? 0,
          drain_eta_s: drainEtaS(due, c as ClassIndex, limit, floors[c] ?? 0),
        };
      });

      // an event counts in the class it was sent in most
      const byEvent = new Map<string, { sends: number; expired: number; classSends: Map<number, number> }>();
      for (const r of week) {
        let e = byEvent.get(r.eventName);
        if (!e) byEvent.set(r.eventName, (e = { sends: 0, expired: 0, classSends: new Map() }));
        const sends = r._sum.sends ?? 0;
        e.sends += sends;
        e.expired += r._sum.expired ?? 0;
        e.classSends.set(r.deliveryClass, (e.classSends.get(r.deliveryClass) ?? 0) + sends + (r._sum.expired ?? 0));
      }
      const total = [...byEvent.values()].reduce((a, e) => a + e.sends, 0);
      const events7d: EventBudget[] = [...byEvent.entries()]
        .map(([name, e]) => {
          const cls = [...e.classSends.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]?.[0] ?? 0;
          return {
            event_name: name,
            class: DELIVERY_CLASSES[cls] ?? 'critical',
            sends: e.sends,
            share: total > 0 ? Math.round((e.sends / total) * 10_000) / 10_000 : 0,
            expired: e.expired,
          };
        })
        .sort((a, b) => b.sends - a.sends || b.expired - a.expired || a.event_name.localeCompare(b.event_name));

      const view = { limit_per_sec: limit, shops_in_workspace: shopIds.length, classes, events_7d: events7d };
      return { ...view, warnings: warningsOf(view) };
    },
  };
}

export type Budget = ReturnType<typeof createBudget>;

export interface ClassQueue {
  class: DeliveryClass;
  /** Due now and waiting, over every shop. */
  queued: number;
  /** Since the oldest of them became due (dueAt); 0 when none. */
  oldestAgeS: number;
}

/**
 * The per-class queue gauges, in one grouped read over the due messages of every shop (through
 * the (status, runAt) index): what /metrics serves, cached by Metrics.onScrapeClasses.
 */
export async function readClassQueues(db: Db, provider: DbProvider, at: Date): Promise<ClassQueue[]> {
  const sql = new Sql(db, provider);
  // raw: an aggregate of a timestamp comes back as the provider stores it (epoch ms on SQLite)
  const rows = await sql.query<{ c: number | bigint; n: number | bigint; oldest: unknown }>(Prisma.sql`
    SELECT "deliveryClass" AS c, COUNT(*) AS n, MIN("dueAt") AS oldest FROM "OutboxMessage"
    WHERE "status" = 'queued' AND "runAt" <= ${sql.ts(at)}
    GROUP BY "deliveryClass"`);
  return DELIVERY_CLASSES.map((name, c) => {
    const r = rows.find((x) => Number(x.c) === c);
    const oldest = r ? rawDate(r.oldest) : null;
    return { class: name, queued: r ? Number(r.n) : 0, oldestAgeS: oldest ? Math.max(0, (at.getTime() - oldest.getTime()) / 1000) : 0 };
  });
}
