// Shared pieces of the fault suite: a clock tests can move forward, a Shopify-like sender that
// retries every non-200 (as Shopify does), and the loss / duplicate accounting every test prints.
import { rawOf, type Db } from '../../src/db/client';
import { lowerDue } from '../../src/outbox/due';
import { mapWebhook } from '../../src/mapping';
import { sampleOrder } from '../../sandbox/samples';
import { DEFAULT_SETTINGS } from '../../src/settings/settings';
import { toRow } from '../../src/outbox/store-messages';
import type { ReceivedEvent } from '../../sandbox/service-emulator';
import type { Stack } from '../helpers/stack';

/** The app's clock: real time plus an offset tests can push forward to skip backoff waits. */
export interface TestClock {
  now: () => Date;
  advance(ms: number): void;
  readonly offsetMs: number;
}

export function testClock(): TestClock {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance: (ms) => {
      offset += ms;
    },
    get offsetMs() {
      return offset;
    },
  };
}

/**
 * Moves the clock forward once nothing is in flight and nothing is due: a jump while a message
 * is claimed would expire its lock under the request and send it twice (a test artefact).
 */
export async function advanceWhenIdle(db: Db, clock: TestClock, ms: number, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const busy = await db.outboxMessage.count({
      where: { OR: [{ status: 'delivering' }, { status: 'queued', runAt: { lte: new Date(clock.now().getTime() + 1000) } }] },
    });
    if (busy === 0) break;
    if (Date.now() > end) throw new Error(`advanceWhenIdle: ${busy} messages still due or in flight after ${timeoutMs} ms`);
    await sleep(50);
  }
  clock.advance(ms);
}

/**
 * Waits for every expected source id at the emulator. Whenever nothing is in flight and nothing
 * is due, the clock jumps to when everything queued is due, so backoff waits take no real time.
 */
export async function driveUntilDelivered(
  s: Pick<Stack, 'app' | 'emulator'>,
  clock: TestClock,
  expected: string[],
  timeoutMs: number,
  filter?: (e: ReceivedEvent) => boolean,
): Promise<Accounting & { skippedMs: number }> {
  const db = s.app.db;
  const end = Date.now() + timeoutMs;
  const start = clock.offsetMs;
  for (;;) {
    const acc = account(expected, arrivals(s.emulator.events(), filter));
    if (acc.missing.length === 0 || Date.now() > end) return { ...acc, skippedMs: clock.offsetMs - start };
    // jump only when nothing is in flight and nothing falls due meanwhile (skipTarget)
    const target = await skipTarget(db, clock.now());
    if (target !== null && target > clock.now().getTime()) {
      clock.advance(target - clock.now().getTime() + 5);
      // the worker's timer was set on the old time: as good as fired
      s.app.worker.nudge();
    }
    await sleep(100);
  }
}

/**
 * Moves the app's clock on as driveUntilDelivered does, so that backoff waits take no real time,
 * until `done` says so; returns the time skipped. Throws after `timeoutMs` of real time.
 */
export async function driveUntil(
  s: Pick<Stack, 'app'>,
  clock: TestClock,
  done: () => Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<number> {
  const end = Date.now() + timeoutMs;
  const start = clock.offsetMs;
  for (;;) {
    if (await done()) return clock.offsetMs - start;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms driving the clock until ${what}`);
    const target = await skipTarget(s.app.db, clock.now());
    if (target !== null && target > clock.now().getTime()) {
      clock.advance(target - clock.now().getTime() + 5);
      // the worker's timer was set on the old time: as good as fired
      s.app.worker.nudge();
    }
    await sleep(100);
  }
}

/**
 * How far to move the clock so that everything queued is due (and every pause over), or null
 * when that is not safe now: a message is in flight, a lane holds its shop (a jump would expire
 * its locks or its lease under it), or a message falls due within the next 100 ms (it could be
 * claimed between this check and the jump).
 */
async function skipTarget(db: Db, now: Date): Promise<number | null> {
  if ((await db.outboxMessage.count({ where: { status: 'delivering' } })) > 0) return null;
  if ((await db.shopDue.count({ where: { leasedBy: { not: null }, leasedUntil: { gt: now } } })) > 0) return null;
  const paused = await db.workspacePacer.findMany({
    where: { pausedUntil: { gt: now } },
    select: { workspaceId: true, pausedUntil: true },
  });
  const pausedShops = paused.length
    ? (await db.connection.findMany({ where: { workspaceId: { in: paused.map((p) => p.workspaceId) } }, select: { shopId: true } })).map(
        (c) => c.shopId,
      )
    : [];
  const soon = new Date(now.getTime() + 100);
  if (await db.outboxMessage.count({ where: { status: 'queued', shopId: { notIn: pausedShops }, runAt: { lte: soon } } })) return null;
  const last = await db.outboxMessage.findFirst({ where: { status: 'queued' }, orderBy: { runAt: 'desc' }, select: { runAt: true } });
  if (!last) return null;
  const pausedWork =
    pausedShops.length > 0 && (await db.outboxMessage.count({ where: { status: 'queued', shopId: { in: pausedShops } } })) > 0;
  return Math.max(last.runAt.getTime(), ...(pausedWork ? paused.map((p) => p.pausedUntil!.getTime()) : []));
}

export { maxInWindow } from '../helpers/clock';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** `p`'s value, or `fallback` if `p` has not settled within `ms`; the timer is cleared either way (no open handle left). */
export async function orAfter<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

export interface SendOutcome {
  /** Webhook ids that got a 200 in the end. */
  accepted: string[];
  /** Non-200 answers (and network errors, as status 0) seen along the way, by status. */
  failures: Record<string, number>;
  /** Webhook ids that never got a 200 within the retries. */
  gaveUp: string[];
}

export interface Delivery {
  webhookId: string;
  send: () => Promise<{ status: number }>;
}

/**
 * Sends deliveries with bounded concurrency. Like Shopify, anything but a 200 (a 5xx, a
 * timeout, a reset connection) is retried, with a short pause, up to `retries` times.
 */
export async function sendAll(
  deliveries: Delivery[],
  opts: { concurrency?: number; retries?: number; retryDelayMs?: number } = {},
): Promise<SendOutcome> {
  const out: SendOutcome = { accepted: [], failures: {}, gaveUp: [] };
  const queue = [...deliveries];
  const worker = async () => {
    for (let d = queue.shift(); d; d = queue.shift()) {
      let ok = false;
      for (let attempt = 0; attempt <= (opts.retries ?? 30) && !ok; attempt++) {
        let status = 0;
        try {
          status = (await d.send()).status;
        } catch {
          status = 0;
        }
        if (status === 200) ok = true;
        else {
          out.failures[status] = (out.failures[status] ?? 0) + 1;
          await sleep(opts.retryDelayMs ?? 250);
        }
      }
      (ok ? out.accepted : out.gaveUp).push(d.webhookId);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 8 }, worker));
  return out;
}

/** Source ids at the emulator, with how many times each arrived. */
export function arrivals(events: ReceivedEvent[], filter: (e: ReceivedEvent) => boolean = () => true): Map<string, number> {
  const m = new Map<string, number>();
  for (const e of events) {
    if (!filter(e)) continue;
    const id = String(e.event_attribute.source_id);
    m.set(id, (m.get(id) ?? 0) + 1);
  }
  return m;
}

export interface Accounting {
  expected: number;
  arrived: number;
  missing: string[];
  /** Extra copies beyond the first, summed over source ids. */
  duplicates: number;
  unexpected: number;
}

export function account(expected: Iterable<string>, got: Map<string, number>): Accounting {
  const want = new Set(expected);
  const missing = [...want].filter((id) => !got.has(id));
  let duplicates = 0;
  let unexpected = 0;
  for (const [id, n] of got) {
    if (!want.has(id)) unexpected += n;
    else duplicates += n - 1;
  }
  return { expected: want.size, arrived: want.size - missing.length, missing, duplicates, unexpected };
}

/** Waits until every expected source id has arrived (or the timeout), then returns the accounting. */
export async function waitForAll(
  stackOrEvents: Stack | (() => ReceivedEvent[]),
  expected: string[],
  timeoutMs: number,
  filter?: (e: ReceivedEvent) => boolean,
): Promise<Accounting> {
  const events = typeof stackOrEvents === 'function' ? stackOrEvents : () => stackOrEvents.emulator.events();
  const end = Date.now() + timeoutMs;
  for (;;) {
    const acc = account(expected, arrivals(events(), filter));
    if (acc.missing.length === 0 || Date.now() > end) return acc;
    await sleep(100);
  }
}

/** Prints a small two-column table of what a fault test did and counted. */
export function report(title: string, rows: Record<string, string | number | boolean>): void {
  const width = Math.max(...Object.keys(rows).map((k) => k.length));
  const lines = Object.entries(rows).map(([k, v]) => `  ${k.padEnd(width)}  ${v}`);
  console.log(`${title}\n${lines.join('\n')}`);
}

/** Message counts by status, for one shop or all. */
export async function statusCounts(stack: Pick<Stack, 'app'>, shopId?: string): Promise<Record<string, number>> {
  const rows = await stack.app.db.outboxMessage.groupBy({ by: ['status'], where: shopId ? { shopId } : {}, _count: { _all: true } });
  return Object.fromEntries(rows.map((r) => [r.status, r._count._all]));
}

export function formatCounts(c: Record<string, number>): string {
  return (
    Object.entries(c)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ') || '(none)'
  );
}

/**
 * Queues one order_placed message per webhook id straight into the outbox, exactly as the intake
 * would map and store orders/create (for tests about draining, not about intake).
 */
export async function queueOrders(db: Db, shop: { id: string; domain: string }, ids: string[], now = new Date()): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) {
    const rows = ids.slice(i, i + 500).flatMap((webhookId, k) =>
      mapWebhook({
        topic: 'orders/create',
        payload: sampleOrder(i + k),
        webhookId,
        shopDomain: shop.domain,
        receivedAt: now,
        settings: DEFAULT_SETTINGS,
      }).messages.map((m) => toRow(m, { shopId: shop.id, status: 'queued', heldReason: null })),
    );
    await db.outboxMessage.createMany({ data: rows });
  }
  // as stage 2 does: the shop's queued work is indexed as due, so a worker finds it
  await lowerDue(db, rawOf(db).provider, [{ shopId: shop.id, runAt: now }]);
}
