// A stage-2 batch's view of the pending claims (PixelClaim): the stored ones its vouches may apply,
// and those its receipts make or settle, by email key and by client, in arrival order. One claim
// per client: a new one replaces the client's earlier claim. What changed becomes the plan's
// claims (to write) and claimsDone (to delete).
import { keyOf, type PixelPlan, type StoredClaim } from './store';

export class ClaimBook {
  /** Client ids claiming each email, by keyOf(shopId, emailKey). */
  private readonly byEmail = new Map<string, Set<string>>();
  /** Each client's claim, by keyOf(shopId, clientId) → keyOf(shopId, emailKey). */
  private readonly byClient = new Map<string, string>();
  /** The claims to write: a claim, or null for a client whose claim is settled. */
  private readonly writes = new Map<string, (StoredClaim & { claimedAt: Date; expiresAt: Date }) | null>();

  constructor(stored: readonly StoredClaim[]) {
    for (const c of stored) this.hold(c);
  }

  /** The client ids claiming the email with this key, now. */
  claimants(shopId: string, emailKey: string): string[] {
    return [...(this.byEmail.get(keyOf(shopId, emailKey)) ?? [])];
  }

  /** A new claim of the client (replacing its earlier one), pending until `expiresAt`. */
  claim(c: StoredClaim, claimedAt: Date, expiresAt: Date): void {
    this.release(c.shopId, c.clientId);
    this.hold(c);
    this.writes.set(keyOf(c.shopId, c.clientId), { ...c, claimedAt, expiresAt });
  }

  /** The client's claim is settled (it identified the client): its row goes. */
  settle(shopId: string, clientId: string): void {
    this.release(shopId, clientId);
    this.writes.set(keyOf(shopId, clientId), null);
  }

  /** The client's claim is gone with the rest of its state (consent withdrawn: the plan's forget deletes the row). */
  forget(shopId: string, clientId: string): void {
    this.release(shopId, clientId);
    this.writes.delete(keyOf(shopId, clientId));
  }

  into(plan: PixelPlan): void {
    for (const [ck, c] of this.writes) {
      if (c) plan.claims.push(c);
      else {
        const [shopId, clientId] = ck.split('\u0000') as [string, string];
        plan.claimsDone.push({ shopId, clientId });
      }
    }
  }

  private hold(c: StoredClaim): void {
    const kk = keyOf(c.shopId, c.emailKey);
    this.byEmail.set(kk, (this.byEmail.get(kk) ?? new Set()).add(c.clientId));
    this.byClient.set(keyOf(c.shopId, c.clientId), kk);
  }

  private release(shopId: string, clientId: string): void {
    const ck = keyOf(shopId, clientId);
    const kk = this.byClient.get(ck);
    if (kk) this.byEmail.get(kk)?.delete(clientId);
    this.byClient.delete(ck);
  }
}
