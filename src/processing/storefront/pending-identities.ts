// A stage-2 unit's view of the pending identities (PixelClaim rows): a visitor gave an email that
// Shopify has not vouched for yet, so the visitor stays anonymous until it does. Held are the
// stored ones this unit's vouches may confirm, and those its receipts add or settle, by email key
// and by client, in arrival order. One per client: a new one replaces the client's earlier one.
// What changed becomes the plan's pendingIdentities (to write) and pendingIdentitiesDone (to delete).
import { keyOf, type PendingIdentity, type StorefrontPlan } from './store';

/** How long an email a visitor gave waits for Shopify to vouch for it, before it is deleted unvouched. */
export const PENDING_IDENTITY_MS = 30 * 60_000;

export class PendingIdentities {
  /** Client ids waiting on each email, by keyOf(shopId, emailKey). */
  private readonly byEmail = new Map<string, Set<string>>();
  /** Each client's pending email, by keyOf(shopId, clientId) → keyOf(shopId, emailKey). */
  private readonly byClient = new Map<string, string>();
  /** The rows to write: a pending identity, or null for a client whose pending identity is settled. */
  private readonly writes = new Map<string, (PendingIdentity & { claimedAt: Date; expiresAt: Date }) | null>();

  constructor(stored: readonly PendingIdentity[]) {
    for (const p of stored) this.hold(p);
  }

  /** The client ids waiting, now, for Shopify to vouch for the email with this key. */
  clientsOf(shopId: string, emailKey: string): string[] {
    return [...(this.byEmail.get(keyOf(shopId, emailKey)) ?? [])];
  }

  /** The client gave an email Shopify has not vouched for: pending until `expiresAt` (its earlier one is replaced). */
  add(p: PendingIdentity, givenAt: Date, expiresAt: Date): void {
    this.release(p.shopId, p.clientId);
    this.hold(p);
    this.writes.set(keyOf(p.shopId, p.clientId), { ...p, claimedAt: givenAt, expiresAt });
  }

  /** The client's pending identity is settled (Shopify vouched: it identified the client): its row goes. */
  settle(shopId: string, clientId: string): void {
    this.release(shopId, clientId);
    this.writes.set(keyOf(shopId, clientId), null);
  }

  /** The client's pending identity goes with the rest of its state (consent withdrawn: the plan's forget deletes the row). */
  forget(shopId: string, clientId: string): void {
    this.release(shopId, clientId);
    this.writes.delete(keyOf(shopId, clientId));
  }

  into(plan: StorefrontPlan): void {
    for (const [ck, p] of this.writes) {
      if (p) plan.pendingIdentities.push(p);
      else {
        const [shopId, clientId] = ck.split('\u0000') as [string, string];
        plan.pendingIdentitiesDone.push({ shopId, clientId });
      }
    }
  }

  private hold(p: PendingIdentity): void {
    const kk = keyOf(p.shopId, p.emailKey);
    this.byEmail.set(kk, (this.byEmail.get(kk) ?? new Set()).add(p.clientId));
    this.byClient.set(keyOf(p.shopId, p.clientId), kk);
  }

  private release(shopId: string, clientId: string): void {
    const ck = keyOf(shopId, clientId);
    const kk = this.byClient.get(ck);
    if (kk) this.byEmail.get(kk)?.delete(clientId);
    this.byClient.delete(ck);
  }
}
