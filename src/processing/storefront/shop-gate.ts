// Which of a unit's storefront inputs stage 2 takes. A batch counts only from a shop that takes
// storefront events now (connected, installed, its web pixel not removed), under that shop's active
// pixel key; the emails a signed webhook names vouch only in such a shop; a retry receipt drains
// nothing for a shop that takes no events. Pure: the unit's shops are read once, by the caller.
import type { ParsedReceipt } from '../unit';
import { PIXEL_RETRY_TOPIC } from './shopper-events';
import type { StorefrontShop } from './store';
import { vouchedEmails, vouchSourceOf, type VouchSource } from './vouch';
import { readBatch, type ReadBatch } from './wire';

/** A storefront batch of the unit, read and validated (wire.ts). */
export interface BatchRead {
  r: ParsedReceipt;
  b: ReadBatch;
}

/** An email a signed webhook of the unit names for its shop (vouch.ts). */
export interface Named {
  r: ParsedReceipt;
  email: string;
  source: VouchSource;
}

/** A named email in a shop that takes storefront events: Shopify vouches for it. */
export interface Vouch extends Named {
  shop: StorefrontShop;
}

/** A batch its shop takes now. */
export interface TakenBatch {
  r: ParsedReceipt;
  b: Extract<ReadBatch, { ok: true }>;
  shop: StorefrontShop;
}

/** The unit's storefront inputs, its shops read: what stage 2 decides on. */
export interface GatedUnit {
  /** Every batch, in the unit's order (each gets an outcome). */
  reads: BatchRead[];
  /** The batches their shops take now. */
  taken: TakenBatch[];
  vouches: Vouch[];
  retries: ParsedReceipt[];
  /** The unit's shops, by domain. */
  shops: Map<string, StorefrontShop>;
  /** The same shops, by id. */
  byId: Map<string, StorefrontShop>;
}

/** The unit's inputs before its shops are read: batches (read), the emails its webhooks name, retries. */
export interface UnitInputs {
  reads: BatchRead[];
  named: Named[];
  retries: ParsedReceipt[];
}

export function unitInputs(items: ParsedReceipt[], signed: ParsedReceipt[]): UnitInputs {
  const named = signed.flatMap((r) => {
    const source = vouchSourceOf(r.topic);
    return source ? vouchedEmails(r.topic, r.payload).map((email) => ({ r, email, source })) : [];
  });
  const retries = items.filter((r) => r.topic === PIXEL_RETRY_TOPIC);
  const reads = items.filter((r) => r.topic !== PIXEL_RETRY_TOPIC).map((r) => ({ r, b: readBatch(r.payload, r.receivedAt) }));
  return { reads, named, retries };
}

/** The shops the inputs name (a batch that does not read names none). */
export function shopDomains(u: UnitInputs): string[] {
  return [
    ...new Set([
      ...u.reads.filter((x) => x.b.ok).map((x) => x.r.shopDomain),
      ...u.named.map((v) => v.r.shopDomain),
      ...u.retries.map((r) => r.shopDomain),
    ]),
  ];
}

/** The inputs with their shops: only the emails of shops that take storefront events vouch. */
export function gate(u: UnitInputs, shops: Map<string, StorefrontShop>): GatedUnit {
  const vouches = u.named.flatMap((v) => {
    const shop = shops.get(v.r.shopDomain);
    return takesEvents(shop) ? [{ ...v, shop }] : [];
  });
  const taken = u.reads.flatMap(({ r, b }) => {
    const shop = shops.get(r.shopDomain);
    return b.ok && usable(shop, b) ? [{ r, b, shop }] : [];
  });
  const byId = new Map([...shops.values()].map((s) => [s.id, s]));
  return { reads: u.reads, taken, vouches, retries: u.retries, shops, byId };
}

/** The shop takes storefront events now. */
export function takesEvents(shop: StorefrontShop | undefined): shop is StorefrontShop {
  return Boolean(shop?.connection && !shop.uninstalledAt && shop.pixel && shop.pixel.state !== 'removed');
}

/** Why the batch's shop takes no storefront events now, or null when it does. */
export function refusal(shop: StorefrontShop | undefined, b: ReadBatch): string | null {
  if (!shop?.connection) return 'shop not connected';
  if (shop.uninstalledAt) return 'app uninstalled';
  return b.ok && takesEvents(shop) && shop.pixel!.key === b.key ? null : 'not the shop’s active pixel key';
}

/** The batch is one its shop takes now. */
export function usable(shop: StorefrontShop | undefined, b: ReadBatch): shop is StorefrontShop {
  return refusal(shop, b) === null;
}
