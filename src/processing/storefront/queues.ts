// A stage-2 unit's view of the storefront events that wait, one queue per client id, in the order
// the events came (stored rows first, then this unit's). A visitor's events are applied in that
// order, so an event whose product Shopify has not described yet holds back the later ones of its
// client ('turn'): a checkout started after an add to cart still ends the cart's abandonment, however
// late the add is described. Per client the queue is: events waiting for an email (an anonymous
// visitor), then the one waiting for its product and those behind it. What changed becomes the
// plan: rows to insert, delete, describe or look up again later (with backoff).
import { backoffDelayMs, type BackoffPolicy } from '../../lib/backoff';
import type { ProductRef } from '../../integrations/shopify/products';
import type { ParsedReceipt } from '../unit';
import { described, type Answers } from './resolve';
import type { StorefrontPlan, QueuedRow, WaitingRow } from './store';
import { dataOf, waitingOf, waitingRow, type Waiting, type WaitsFor } from './waiting';
import type { StoreEvent } from './wire';

/**
 * How long a storefront event waits, at most: for its visitor's vouched email, or for Shopify to
 * describe its product. Past it the sweeper deletes it unsent (counted; logged once per shop).
 */
export const WAITING_EVENT_MS = 24 * 3_600_000;

/**
 * When an event that waits for its product is looked up again: half a minute after it came (a
 * lookup still running then has cached its answer), then doubling to a quarter of an hour.
 */
export const PRODUCT_RETRY_BACKOFF: BackoffPolicy = { baseMs: 30_000, maxMs: 15 * 60_000, jitter: 0.2 };

interface Item {
  w: Waiting;
  waitsFor: WaitsFor;
  /** The stored row (absent for an event of this unit). */
  row?: WaitingRow & Partial<Pick<QueuedRow, 'describeAt' | 'attempts'>>;
  /** The receipt of an event of this unit. */
  r?: ParsedReceipt;
}

export interface DrainResult {
  /** Events that left the queue described (applied, or now waiting for an email only). */
  described: number;
  /** Events dropped: Shopify has no such product or variant, or read_products is not granted. */
  dropped: { unknown: number; no_scope: number };
  /** True when an event still waits for its product (it and those behind it stay). */
  blocked: boolean;
}

export class ClientQueues {
  private readonly items = new Map<string, Item[]>();
  private readonly rescheduled = new Set<number>();

  constructor(
    private readonly plan: StorefrontPlan,
    private readonly now: Date,
    private readonly anonymousMs: number,
    /** Events waiting for an email, of the clients that may be identified in this unit. */
    emailRows: Map<string, WaitingRow[]>,
    /** Events waiting for their product, and those behind them. */
    queued: Map<string, QueuedRow[]>,
    private readonly random: () => number = Math.random,
  ) {
    for (const [ck, rows] of emailRows) this.append(ck, rows);
    for (const [ck, rows] of queued) this.append(ck, rows);
  }

  private append(ck: string, rows: WaitingRow[]): void {
    const list = this.items.get(ck) ?? [];
    for (const row of rows) {
      const w = waitingOf(row);
      if (w) list.push({ w, waitsFor: row.waitsFor as WaitsFor, row });
    }
    this.items.set(ck, list);
  }

  /** The client's queue holds an event waiting for its product (later events wait behind it). */
  held(ck: string): boolean {
    return (this.items.get(ck) ?? []).some((i) => i.waitsFor !== 'email');
  }

  /** Adds an event of this unit behind the client's others; returns what it waits for. */
  push(ck: string, w: Waiting, r: ParsedReceipt): WaitsFor {
    const waitsFor: WaitsFor = !w.described ? 'product' : this.held(ck) ? 'turn' : 'email';
    this.items.set(ck, [...(this.items.get(ck) ?? []), { w, waitsFor, r }]);
    return waitsFor;
  }

  /** Takes the events at the front that waited for an email only (they count for it now), in order. */
  takeForEmail(ck: string): StoreEvent[] {
    const list = this.items.get(ck) ?? [];
    const n = list.findIndex((i) => i.waitsFor !== 'email');
    const taken = list.splice(0, n < 0 ? list.length : n);
    for (const i of taken) if (i.row) this.done(i.row.id);
    return taken.flatMap((i) => (i.w.described ? [i.w.event] : []));
  }

  /**
   * Describes the client's held events with this unit's answers, in order, until one still waits
   * for its product: each goes to `apply` (an identified visitor's), or, with `apply` null (an
   * anonymous one's), waits for an email from now on. Stored events still held are looked up again
   * after a backoff when their lookup was due.
   */
  drain(ck: string, answers: Answers, apply: ((e: StoreEvent) => void) | null): DrainResult {
    const shopId = ck.split('\u0000')[0]!;
    const list = this.items.get(ck) ?? [];
    const result: DrainResult = { described: 0, dropped: { unknown: 0, no_scope: 0 }, blocked: false };
    const start = list.findIndex((i) => i.waitsFor !== 'email');
    if (start < 0) return result;
    const kept = list.slice(0, start);
    let i = start;
    for (; i < list.length; i++) {
      const item = list[i]!;
      let event: StoreEvent;
      if (item.w.described) event = item.w.event;
      else {
        const facts = answers.get(shopId, item.w.event.ref);
        if (facts === 'pending') {
          result.blocked = true;
          break;
        }
        if (facts === 'unknown' || facts === 'no_scope') {
          result.dropped[facts] += 1;
          if (item.row) this.done(item.row.id);
          continue;
        }
        event = described(item.w.event, facts);
        result.described += 1;
      }
      if (apply) {
        apply(event);
        if (item.row) this.done(item.row.id);
        continue;
      }
      const w: Waiting = { described: true, event };
      if (item.row) this.plan.eventsDescribed.push({ id: item.row.id, data: dataOf(w) });
      kept.push({ ...item, w, waitsFor: 'email' });
    }
    const rest = list.slice(i);
    if (result.blocked) this.later(rest);
    this.items.set(ck, [...kept, ...rest]);
    return result;
  }

  /** A client that withdrew consent: its stored rows go with the plan's forget, its new events are not kept. */
  forget(ck: string): void {
    this.items.delete(ck);
  }

  /** This unit's events, into the rows they wait in. */
  into(plan: StorefrontPlan): void {
    for (const [ck, list] of this.items) {
      const [shopId, clientId] = ck.split('\u0000') as [string, string];
      // behind a stored event that waits for its product, not due before it
      const first = this.now.getTime() + backoffDelayMs(1, PRODUCT_RETRY_BACKOFF, this.random);
      const head = list.find((i) => i.row?.describeAt)?.row?.describeAt?.getTime() ?? 0;
      const describeAt = new Date(Math.max(first, head));
      for (const i of list) {
        if (i.row || !i.r) continue;
        const expiresAt = new Date(i.r.receivedAt.getTime() + this.anonymousMs);
        const row = waitingRow(shopId, clientId, i.w, i.waitsFor, expiresAt, i.waitsFor === 'email' ? null : describeAt);
        if (row) plan.waiting.push(row);
      }
    }
  }

  private done(id: number): void {
    this.plan.eventsDone.push(id);
  }

  /** Stored events still held: all looked up again after a growing wait, once any of them was due. */
  private later(rest: Item[]): void {
    const stored = rest.flatMap((i) => (i.row ? [i.row] : []));
    if (!stored.some((row) => row.describeAt && row.describeAt <= this.now)) return;
    const attempts = Math.max(...stored.map((row) => row.attempts ?? 0));
    const describeAt = new Date(this.now.getTime() + backoffDelayMs(attempts + 1, PRODUCT_RETRY_BACKOFF, this.random));
    for (const row of stored) {
      row.describeAt = describeAt;
      if (this.rescheduled.has(row.id)) continue;
      this.rescheduled.add(row.id);
      this.plan.eventsLater.push({ id: row.id, describeAt });
    }
  }
}

/** The products the stored events of these queues wait for, by shop id. */
export function heldRefs(held: Map<string, QueuedRow[]>): Map<string, ProductRef[]> {
  const out = new Map<string, ProductRef[]>();
  for (const [ck, rows] of held) {
    const shopId = ck.split('\u0000')[0]!;
    const refs = out.get(shopId) ?? [];
    for (const row of rows) {
      const w = row.waitsFor === 'product' ? waitingOf(row) : null;
      if (w && !w.described) refs.push(w.event.ref);
    }
    out.set(shopId, refs);
  }
  return out;
}
