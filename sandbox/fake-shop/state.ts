// What the fake Shopify remembers: shops, the access and refresh tokens it issued, OAuth codes,
// counters for tests, and failures to inject.
import { randomBytes } from 'node:crypto';

export interface FakeShopInit {
  domain: string;
  /** Numeric id; the gid is gid://shopify/Shop/{id}. */
  id?: string;
  name?: string;
  /** Scopes the shop has granted the app (comma-separated); defaults to FakeShopOptions.scopes. */
  scopes?: string;
  /** `shop.primaryDomain.url`; defaults to https://{domain}. */
  primaryDomain?: string;
}

export interface FakeShopRecord {
  domain: string;
  id: string;
  name: string;
}

/** The app/scopes_update webhook payload Shopify sends when the granted scopes change. */
export interface ScopesUpdatePayload {
  id: number;
  shop_id: number;
  previous: string[];
  current: string[];
  updated_at: string;
}

export interface TokenStats {
  codeGrants: number;
  exchanges: number;
  /** Successful refreshes. */
  refreshes: number;
  /** Refresh attempts answered invalid_grant (reused, revoked, expired or unknown token). */
  refreshRejected: number;
  accessTokensIssued: number;
  graphqlCalls: number;
  /** Calls answered 401 for an unknown, revoked or expired access token. */
  graphqlUnauthorized: number;
  /** The latest tokens issued, so tests can check they never appear in clear anywhere. */
  lastAccessToken?: string;
  lastRefreshToken?: string;
}

export type FailEndpoint = 'access_token' | 'graphql';

/** How a shop's Admin GraphQL misbehaves, for the queries it matches, until it is ended. */
export interface Degradation {
  /** Queries it applies to (default: every query). */
  only?: RegExp;
  /** Every answer waits this long first. */
  delayMs?: number;
  /** Every answer is this HTTP status (a 5xx: Shopify failing), with no data. */
  status?: number;
}

interface AccessToken {
  shop: string;
  expiresAt: number | null;
  revoked: boolean;
}
interface RefreshToken {
  shop: string;
  expiresAt: number;
  used: boolean;
  revoked: boolean;
}

export interface TokenResponse {
  access_token: string;
  scope: string;
  expires_in?: number;
  refresh_token?: string;
  refresh_token_expires_in?: number;
}

let nextShopId = 1000;
const splitScopes = (scopes: string) =>
  scopes
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const token = (prefix: string) => `${prefix}_${randomBytes(16).toString('hex')}`;

export class FakeShopState {
  readonly shops = new Map<string, FakeShopRecord>();
  private readonly stats = new Map<string, TokenStats>();
  private readonly access = new Map<string, AccessToken>();
  private readonly refresh = new Map<string, RefreshToken>();
  private readonly codes = new Map<string, { shop: string; expiresAt: number; used: boolean }>();
  private readonly failures = new Map<FailEndpoint, Array<{ status: number }>>();
  private readonly grants = new Map<string, string[]>();
  private readonly primaryDomains = new Map<string, string>();
  private readonly degradations = new Map<string, Set<Degradation>>();

  constructor(
    readonly opts: { apiKey: string; apiSecret: string; scopes: string; accessTokenTtlSec: number; refreshTokenTtlSec: number },
  ) {}

  addShop(init: FakeShopInit): FakeShopRecord {
    const domain = init.domain.toLowerCase();
    const existing = this.shops.get(domain);
    const record = {
      domain,
      id: init.id ?? existing?.id ?? String(nextShopId++),
      name: init.name ?? existing?.name ?? domain.replace(/\..*$/, '').replace(/[-_]+/g, ' '),
    };
    if (init.scopes !== undefined || !this.grants.has(domain)) this.grants.set(domain, splitScopes(init.scopes ?? this.opts.scopes));
    if (init.primaryDomain !== undefined) this.primaryDomains.set(domain, init.primaryDomain.replace(/\/+$/, ''));
    this.shops.set(domain, record);
    return record;
  }

  /**
   * The merchant grants (or revokes) scopes, as Shopify's grant modal or the admin would do. Like
   * Shopify, the shop's existing tokens carry the new grant at once. Returns the payload of the
   * app/scopes_update webhook Shopify then sends.
   */
  changeScopes(shop: string, grant: readonly string[], revoke: readonly string[] = []): ScopesUpdatePayload {
    const record = this.shops.get(shop);
    if (!record) throw new Error(`unknown shop ${shop}`);
    const previous = this.scopesOf(shop);
    const current = previous.filter((s) => !revoke.includes(s));
    for (const s of grant) if (!current.includes(s)) current.push(s);
    this.grants.set(shop, current);
    return {
      id: Number(record.id) || 0,
      shop_id: Number(record.id) || 0,
      previous,
      current: [...current],
      updated_at: new Date().toISOString(),
    };
  }

  /** The scopes the shop has granted (tokens report them, Admin GraphQL checks them). */
  scopesOf(shop: string): string[] {
    return [...(this.grants.get(shop) ?? splitScopes(this.opts.scopes))];
  }

  /** `shop.primaryDomain.url`: https://{domain} unless the shop was given another. */
  primaryDomainOf(shop: string): string {
    return this.primaryDomains.get(shop) ?? `https://${shop}`;
  }

  statsFor(shop: string): TokenStats {
    let s = this.stats.get(shop);
    if (!s) {
      s = { codeGrants: 0, exchanges: 0, refreshes: 0, refreshRejected: 0, accessTokensIssued: 0, graphqlCalls: 0, graphqlUnauthorized: 0 };
      this.stats.set(shop, s);
    }
    return s;
  }

  /** Issues an access token (and a rotating refresh token when expiring). */
  issue(shop: string, expiring: boolean): TokenResponse {
    const now = Date.now();
    const accessToken = token('shpat');
    const ttl = this.opts.accessTokenTtlSec;
    this.access.set(accessToken, { shop, expiresAt: expiring ? now + ttl * 1000 : null, revoked: false });
    const stats = this.statsFor(shop);
    stats.accessTokensIssued++;
    stats.lastAccessToken = accessToken;
    const scope = this.scopesOf(shop).join(',');
    if (!expiring) return { access_token: accessToken, scope };
    const refreshToken = token('shprt');
    const rttl = this.opts.refreshTokenTtlSec;
    this.refresh.set(refreshToken, { shop, expiresAt: now + rttl * 1000, used: false, revoked: false });
    stats.lastRefreshToken = refreshToken;
    return { access_token: accessToken, scope, expires_in: ttl, refresh_token: refreshToken, refresh_token_expires_in: rttl };
  }

  /** The shop an access token was issued for, and whether it still works (not revoked or expired). */
  checkAccessToken(accessToken: string): { shop: string; valid: boolean } | null {
    const t = this.access.get(accessToken);
    if (!t) return null;
    return { shop: t.shop, valid: !t.revoked && (t.expiresAt === null || t.expiresAt > Date.now()) };
  }

  /** Uses a refresh token once. `ok` is false when it is unknown, used, revoked or expired. */
  consumeRefreshToken(refreshToken: string): { ok: boolean; shop?: string } {
    const t = this.refresh.get(refreshToken);
    if (!t) return { ok: false };
    if (t.used || t.revoked || t.expiresAt <= Date.now()) {
      this.statsFor(t.shop).refreshRejected++;
      return { ok: false, shop: t.shop };
    }
    t.used = true;
    this.statsFor(t.shop).refreshes++;
    return { ok: true, shop: t.shop };
  }

  newCode(shop: string): string {
    const code = randomBytes(12).toString('hex');
    this.codes.set(code, { shop, expiresAt: Date.now() + 60_000, used: false });
    return code;
  }

  consumeCode(code: string): string | null {
    const c = this.codes.get(code);
    if (!c || c.used || c.expiresAt <= Date.now()) return null;
    c.used = true;
    return c.shop;
  }

  /** Like an uninstall: every access and refresh token of the shop stops working. */
  revokeTokens(shop: string): void {
    for (const t of this.access.values()) if (t.shop === shop) t.revoked = true;
    for (const t of this.refresh.values()) if (t.shop === shop) t.revoked = true;
  }

  /** The shop's access tokens expire now (GraphQL answers 401); refresh tokens stay valid. */
  expireAccessTokens(shop: string): void {
    for (const t of this.access.values()) if (t.shop === shop) t.expiresAt = Date.now() - 1;
  }

  /** The shop's Admin GraphQL misbehaves as `d` says until the returned function is called. */
  degrade(shop: string, d: Degradation): () => void {
    const set = this.degradations.get(shop) ?? new Set();
    set.add(d);
    this.degradations.set(shop, set);
    return () => void set.delete(d);
  }

  /** What applies to a query of the shop now: the longest delay, and a status if any. */
  degradationOf(shop: string, query: string): { delayMs: number; status: number | null } {
    let delayMs = 0;
    let status: number | null = null;
    for (const d of this.degradations.get(shop) ?? []) {
      if (d.only && !d.only.test(query)) continue;
      delayMs = Math.max(delayMs, d.delayMs ?? 0);
      status ??= d.status ?? null;
    }
    return { delayMs, status };
  }

  failNext(endpoint: FailEndpoint, status: number, times: number): void {
    const queue = this.failures.get(endpoint) ?? [];
    for (let i = 0; i < times; i++) queue.push({ status });
    this.failures.set(endpoint, queue);
  }

  takeFailure(endpoint: FailEndpoint): { status: number } | undefined {
    return this.failures.get(endpoint)?.shift();
  }
}
