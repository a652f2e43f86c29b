// What a storefront unit counts as it decides: its events by outcome, the pending identities it
// added and the visitors it identified, the events dropped for their product. They reach the
// metrics only once the unit's plan is written, so a unit that is rolled back and redone counts once.
import type { Metrics } from '../../observability/metrics';
import type { Count, ShopCtx } from './shopper-events';

export class UnitCounts {
  private readonly events = new Map<Count, number>();
  /** Pending identities added, and visitors identified (connector_pixel_claims_total's pending and vouched). */
  private readonly identities = { pending: 0, vouched: 0 };
  private readonly dropped = { unknown: 0, no_scope: 0 };

  count(what: Count, n = 1): void {
    if (n !== 0) this.events.set(what, (this.events.get(what) ?? 0) + n);
  }

  identity(outcome: 'pending' | 'vouched'): void {
    this.identities[outcome] += 1;
  }

  /** Events dropped for their product: Shopify has no such product or variant, or read_products is not granted. */
  drop(ctx: ShopCtx, reason: 'unknown' | 'no_scope', n = 1): void {
    if (n === 0) return;
    this.dropped[reason] += n;
    if (reason === 'unknown') ctx.stats.dropped += n;
    this.count('dropped', n);
  }

  /** Into the metrics, once the plan is written. */
  record(metrics: Metrics): void {
    for (const [outcome, n] of this.events) metrics.pixelEvents.inc({ outcome }, n);
    for (const [outcome, n] of Object.entries(this.identities)) if (n) metrics.pendingIdentities.inc({ outcome }, n);
    for (const [reason, n] of Object.entries(this.dropped)) if (n) metrics.pixelProductsDropped.inc({ reason }, n);
  }
}
