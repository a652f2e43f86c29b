// Which emails a stage-2 batch may send storefront events to, and how many. An email from the
// pixel makes a pending identity; it identifies a visitor only once Shopify vouched for it for the shop
// (PixelShopper: a customers/*, orders/* or checkouts/* webhook, or an Admin API lookup that found
// the customer). Emails are held by key (email-keys.ts), never stored in clear here. Per batch:
// the rows of the emails involved are read once; lookups answer what they can before the deadline
// (found: vouched; not found: unknown for UNKNOWN_TTL_MS; unanswered: nothing is learned, the
// identity stays pending); each email's counts of the UTC day bound its events and abandonments.
import type { CustomerLookup } from '../../integrations/shopify/customer-lookup';
import type { EmailKeys } from './email-keys';
import { keyOf, type StorefrontPlan, type StorefrontShop, type StorefrontStore, type ShopperRow } from './store';
import type { VouchSource } from './vouch';

/** How long an Admin API "no such customer" stands before the email may be asked about again. */
export const UNKNOWN_TTL_MS = 3_600_000;
const DAY_MS = 86_400_000;

export interface TrustOptions {
  keys: EmailKeys;
  customers: CustomerLookup;
  /** How long a vouch stands without being renewed. */
  vouchMs: number;
}

export type QuotaKind = 'events' | 'abandonments';

export class BatchTrust {
  private readonly rows = new Map<string, ShopperRow>();
  /** Emails vouched during this batch (webhooks of the batch, lookups that found the customer). */
  private readonly vouchedNow = new Set<string>();
  private readonly unknownNow = new Set<string>();
  private readonly keyCache = new Map<string, string>();
  private readonly loaded = new Set<string>();
  /** Today's counts of the emails this batch sent events to, by keyOf(shopId, emailKey). */
  private readonly quotas = new Map<string, { shopId: string; emailKey: string; events: number; abandonments: number }>();
  private readonly today: number;
  apiCalls = 0;

  constructor(
    private readonly opts: TrustOptions,
    private readonly store: StorefrontStore,
    private readonly now: Date,
  ) {
    this.today = Math.floor(now.getTime() / DAY_MS);
  }

  /** The email's key in this shop (computed once per batch). */
  key(shopId: string, email: string): string {
    const k = keyOf(shopId, email);
    let v = this.keyCache.get(k);
    if (v === undefined) {
      v = this.opts.keys.of(shopId, email);
      this.keyCache.set(k, v);
    }
    return v;
  }

  private rowKey(shopId: string, email: string): string {
    return keyOf(shopId, this.key(shopId, email));
  }

  /** Reads the rows of these emails (by shop id) not read yet. */
  async load(emails: Map<string, Set<string>>): Promise<void> {
    const keys = new Map<string, Set<string>>();
    for (const [shopId, list] of emails) {
      for (const email of list) {
        const rk = this.rowKey(shopId, email);
        if (this.loaded.has(rk)) continue;
        this.loaded.add(rk);
        keys.set(shopId, (keys.get(shopId) ?? new Set()).add(this.key(shopId, email)));
      }
    }
    if (keys.size === 0) return;
    for (const [k, row] of await this.store.shoppers(keys)) this.rows.set(k, row);
  }

  isVouched(shopId: string, email: string): boolean {
    const rk = this.rowKey(shopId, email);
    if (this.vouchedNow.has(rk)) return true;
    const row = this.rows.get(rk);
    return row !== undefined && row.state === 'vouched' && row.expiresAt > this.now;
  }

  /** A lookup found no customer for the email recently (it is not asked again until that expires). */
  isKnownUnknown(shopId: string, email: string): boolean {
    const rk = this.rowKey(shopId, email);
    if (this.unknownNow.has(rk)) return true;
    const row = this.rows.get(rk);
    return row !== undefined && row.state === 'unknown' && row.expiresAt > this.now;
  }

  /** Shopify named the email for the shop: recorded in the plan, and true for the rest of the batch. */
  vouch(plan: StorefrontPlan, shopId: string, email: string, source: VouchSource): void {
    const rk = this.rowKey(shopId, email);
    this.vouchedNow.add(rk);
    this.unknownNow.delete(rk);
    plan.vouches.push({
      shopId,
      emailKey: this.key(shopId, email),
      source,
      checkedAt: this.now,
      expiresAt: new Date(this.now.getTime() + this.opts.vouchMs),
    });
  }

  /**
   * Asks the Admin API about these emails (by shop), all shops side by side, until `deadline`
   * (Date.now epoch ms). Found emails are vouched; the ones it answered for are cached as unknown;
   * returns the found ones by shop id.
   */
  async lookup(
    plan: StorefrontPlan,
    shops: Map<string, StorefrontShop>,
    emails: Map<string, Set<string>>,
    deadline: number,
  ): Promise<Map<string, string[]>> {
    const found = new Map<string, string[]>();
    await Promise.all(
      [...emails].map(async ([shopId, list]) => {
        const shop = shops.get(shopId);
        if (!shop || list.size === 0) return;
        const res = await this.opts.customers.find(shop, [...list], deadline);
        this.apiCalls += res.apiCalls;
        for (const email of res.found) this.vouch(plan, shopId, email, 'admin_api');
        for (const email of res.notFound) {
          this.unknownNow.add(this.rowKey(shopId, email));
          plan.unknown.push({
            shopId,
            emailKey: this.key(shopId, email),
            checkedAt: this.now,
            expiresAt: new Date(this.now.getTime() + UNKNOWN_TTL_MS),
          });
        }
        if (res.found.size) found.set(shopId, [...res.found]);
      }),
    );
    return found;
  }

  /** Takes one of the email's events or abandonments of the day (the shop's `limit`); false when it has none left. */
  spend(shopId: string, email: string, kind: QuotaKind, limit: number): boolean {
    const rk = this.rowKey(shopId, email);
    let q = this.quotas.get(rk);
    if (!q) {
      const row = this.rows.get(rk);
      const same = row !== undefined && row.quotaDay === this.today;
      q = { shopId, emailKey: this.key(shopId, email), events: same ? row.events : 0, abandonments: same ? row.abandonments : 0 };
      this.quotas.set(rk, q);
    }
    if (q[kind] >= limit) return false;
    q[kind] += 1;
    return true;
  }

  /** The day's counts spent by this batch, into the plan. */
  flush(plan: StorefrontPlan): void {
    const expiresAt = new Date(this.now.getTime() + this.opts.vouchMs);
    for (const q of this.quotas.values()) plan.quotas.push({ ...q, quotaDay: this.today, checkedAt: this.now, expiresAt });
  }
}
