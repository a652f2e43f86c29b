// A unit's receipts to their handlers, by the topic table (topics.ts): each handler answers a
// plan (plan.ts), and the unit's plans come out in the order their writes commit.
import type { PendingReceipt } from '../intake/receipt-store';
import { LoopBudget } from './loop-budget';
import { outcomePlan, type StorefrontStage, type SideHandler, type UnitPlan } from './plan';
import { handlingOf, isSerial, type SideEffectTopic } from './topics';
import { parse, unitEnd, type Parsed, type ParsedReceipt } from './unit';

export interface Handlers {
  /** The forwarded topics of a unit, in arrival order (forward/forward-receipts.ts). */
  forward: (items: ParsedReceipt[]) => Promise<UnitPlan>;
  /** A privacy or lifecycle receipt, a unit of its own (privacy/gdpr.ts). */
  privacy: { handle(r: ParsedReceipt): Promise<UnitPlan> };
  /** Topics handled by a side handler rather than forwarded (side/). */
  sideHandlers?: Record<SideEffectTopic, SideHandler>;
  /** Storefront pixel batches (receipts of kind 'pixel'); ignored without it. */
  storefront?: StorefrontStage;
}

export interface PlannedUnit {
  /** The handlers' plans, in the order they are written. */
  plans: UnitPlan[];
  /** Receipts the unit took, from the first pending. */
  size: number;
  /** A privacy or lifecycle receipt alone. */
  serial: boolean;
}

/**
 * Parses and plans the first unit of the pending receipts: a compliance receipt alone (it changes
 * what the receipts after it may see), or the run of ordinary receipts up to the next one.
 */
export async function planUnit(h: Handlers, pending: PendingReceipt[]): Promise<PlannedUnit> {
  // only the unit is parsed: the receipts after it wait for units of their own. The loop turns
  // between parses once they have taken a while (a body of megabytes takes tens of ms)
  const budget = new LoopBudget();
  const unit: Parsed[] = [];
  for (const p of pending.slice(0, unitEnd(pending))) {
    unit.push(parse(p));
    await budget.step();
  }
  const serial = isSerial(pending[0]!.topic, pending[0]!.kind);
  const privacy = serial ? unit[0]!.receipt : undefined;
  if (privacy) return { plans: [await h.privacy.handle(privacy)], size: 1, serial };
  const others: UnitPlan[] = [];
  const toForward: ParsedReceipt[] = [];
  const batches: ParsedReceipt[] = [];
  // by the topic table (topics.ts); the privacy and lifecycle topics were units of their own above
  for (const p of unit) {
    const r = p.receipt;
    if (!r) {
      others.push({ outcomes: [p.rejected!], due: [], write: async () => undefined });
      continue;
    }
    const handling = handlingOf(r.topic, p.kind);
    const side = handling === 'side_effect' ? h.sideHandlers?.[r.topic as SideEffectTopic] : undefined;
    if (handling === 'storefront') {
      if (h.storefront) batches.push(r);
      else others.push(outcomePlan([r], 'ignored', 'storefront events are not processed here'));
    } else if (side) others.push(await side(r));
    else toForward.push(r);
  }
  const forwarded = toForward.length ? await h.forward(toForward) : null;
  // the storefront's batches, and the emails the unit's webhooks name (the pending identities they vouch for)
  const storefront = h.storefront && (batches.length || toForward.length) ? await h.storefront(batches, toForward) : null;
  await budget.step();
  // storefront first: a shopper's adds come before their order, and the order's write cancels
  // the storefront abandonments of its email, those of this unit included
  const plans = [storefront, forwarded, ...others].filter((p): p is UnitPlan => p !== null);
  return { plans, size: unit.length, serial };
}
