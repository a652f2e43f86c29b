// Shopify's GraphQL Admin API rate limit, modelled as Shopify documents it: a leaky bucket of
// cost points per app and shop (2000 points, restoring 100 per second on a standard plan). A query
// whose requested cost exceeds what is available is not run: HTTP 200 with a THROTTLED error and
// the cost extension, from which a client computes how long to wait.
export interface ThrottleStatus {
  maximumAvailable: number;
  currentlyAvailable: number;
  restoreRate: number;
}

interface Bucket {
  max: number;
  rate: number;
  available: number;
  at: number;
}

export class CostBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly defaults = { maximumAvailable: 2000, restoreRate: 100 }) {}

  private bucket(shop: string, now: number): Bucket {
    let b = this.buckets.get(shop);
    if (!b) {
      b = { max: this.defaults.maximumAvailable, rate: this.defaults.restoreRate, available: this.defaults.maximumAvailable, at: now };
      this.buckets.set(shop, b);
    }
    b.available = Math.min(b.max, b.available + ((now - b.at) / 1000) * b.rate);
    b.at = now;
    return b;
  }

  /** Sets the shop's bucket (tests: an almost empty bucket, a slow restore rate). */
  set(shop: string, patch: Partial<ThrottleStatus>, now = Date.now()): void {
    const b = this.bucket(shop, now);
    if (patch.maximumAvailable !== undefined) b.max = patch.maximumAvailable;
    if (patch.restoreRate !== undefined) b.rate = patch.restoreRate;
    if (patch.currentlyAvailable !== undefined) b.available = Math.min(b.max, patch.currentlyAvailable);
  }

  /** Spends `requested` points if available. */
  spend(shop: string, requested: number, now = Date.now()): { ok: boolean; status: ThrottleStatus } {
    const b = this.bucket(shop, now);
    const ok = b.available >= requested;
    if (ok) b.available -= requested;
    return { ok, status: { maximumAvailable: b.max, currentlyAvailable: Math.floor(b.available), restoreRate: b.rate } };
  }

  /**
   * Runs `answer` when the bucket holds `requested` points: its body gets the cost extension.
   * Otherwise the THROTTLED answer Shopify gives.
   */
  charge(shop: string, requested: number, answer: () => Record<string, unknown>): Record<string, unknown> {
    const { ok, status } = this.spend(shop, requested);
    if (!ok) {
      return {
        errors: [{ message: 'Throttled', extensions: { code: 'THROTTLED', documentation: 'https://shopify.dev/api/usage/rate-limits' } }],
        extensions: { cost: { requestedQueryCost: requested, actualQueryCost: null, throttleStatus: status } },
      };
    }
    const body = answer();
    return { ...body, extensions: { cost: { requestedQueryCost: requested, actualQueryCost: requested, throttleStatus: status } } };
  }
}

/** Shopify's answer to a field the app's granted scopes do not cover. */
export function accessDenied(field: string, scope: string): Record<string, unknown> {
  return {
    errors: [
      {
        message: `Access denied for ${field} field. Required access: \`${scope}\` access scope.`,
        extensions: {
          code: 'ACCESS_DENIED',
          documentation: 'https://shopify.dev/api/usage/access-scopes',
          requiredAccess: `\`${scope}\` access scope.`,
        },
        path: [field],
      },
    ],
    data: { [field]: null },
  };
}

/** Whether `granted` covers `needed` (a write scope grants its read scope, as on Shopify). */
export function grants(granted: readonly string[], needed: string): boolean {
  return granted.includes(needed) || (needed.startsWith('read_') && granted.includes(`write_${needed.slice(5)}`));
}
