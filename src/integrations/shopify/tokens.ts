// The offline token lifecycle. Embedded installs get an EXPIRING offline token by token exchange
// (`expiring=1`): it lives an hour and comes with a refresh token that rotates on every use.
// getOfflineSession refreshes shortly before expiry and stores the rotated pair. A failed refresh
// is a state on the Shop row (tokenStatus 'refresh_failed' + a sentence), never a crash; the next
// embedded page load heals it by token exchange.
import { RequestedTokenType, type Session } from '@shopify/shopify-api';
import type { Db } from '../../db/client';
import type { Logger } from '../../observability/logger';
import { routeShop, type ShopifyApi } from './api';
import { classifyShopifyError, describeShopifyError } from './errors';
import { sanitizeShop } from './sanitize';
import type { SessionStore } from './session-storage';

export type TokenStatus = 'none' | 'active' | 'refresh_failed' | 'revoked';

export interface OfflineTokensDeps {
  shopify: ShopifyApi;
  db: Db;
  sessions: SessionStore;
  logger: Logger;
  /** Refresh when fewer than this many seconds of the access token are left. Default 300. */
  refreshMarginSec?: number;
}

export interface OfflineTokens {
  /**
   * The shop's offline session, refreshed first when its access token expires within the
   * margin. Null when there is none, or when it has expired and could not be refreshed.
   */
  getOfflineSession(shop: string): Promise<Session | null>;
  /**
   * Token exchange of an App Bridge session token for an expiring offline token; stores it.
   * `seenAt` (epoch ms): when the caller found no usable session. An exchange for the shop that
   * finished after it is used instead of another, so a request that read before a concurrent
   * exchange stored its token, and asks after that exchange finished, makes no second one.
   */
  exchangeSessionToken(shop: string, sessionToken: string, seenAt?: number): Promise<Session>;
  /** Stores an offline session (e.g. from the authorization-code grant). */
  saveOfflineSession(session: Session): Promise<void>;
  /** Refreshes now, whatever the expiry. Null when the refresh failed and the token has expired. */
  refreshOfflineSession(shop: string): Promise<Session | null>;
}

export function createOfflineTokens(deps: OfflineTokensDeps): OfflineTokens {
  const { shopify, db, sessions, logger } = deps;
  const marginMs = (deps.refreshMarginSec ?? 300) * 1000;
  // One refresh per shop at a time: a rotating refresh token is good for one use only.
  const inflight = new Map<string, Promise<unknown>>();
  // each shop's last exchange, for requests that started before it finished (bounded: entries
  // older than a minute are dropped as new ones come)
  const exchanged = new Map<string, { session: Session; at: number }>();
  const once = <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const running = inflight.get(key) as Promise<T> | undefined;
    if (running) return running;
    const p = fn().finally(() => inflight.delete(key));
    inflight.set(key, p);
    return p;
  };

  const load = async (shop: string): Promise<Session | null> => {
    const s = await sessions.loadSession(shopify.session.getOfflineId(shop));
    return s?.accessToken ? s : null;
  };
  const expiresSoon = (s: Session) => s.expires !== undefined && s.expires.getTime() - Date.now() < marginMs;
  const stillValid = (s: Session) => s.expires === undefined || s.expires.getTime() > Date.now();

  async function refresh(shop: string, current: Session): Promise<Session | null> {
    const fallback = stillValid(current) ? current : null;
    if (!current.refreshToken) {
      await setTokenStatus(
        db,
        shop,
        'refresh_failed',
        'The access token expires and no refresh token is stored; the merchant must open the app again to renew access.',
      );
      return fallback;
    }
    if (current.refreshTokenExpires && current.refreshTokenExpires.getTime() <= Date.now()) {
      await setTokenStatus(
        db,
        shop,
        'refresh_failed',
        'The refresh token has expired; the merchant must open the app again to renew access.',
      );
      return fallback;
    }
    try {
      routeShop(shopify, shop);
      const { session } = await shopify.auth.refreshToken({ shop, refreshToken: current.refreshToken });
      await sessions.storeSession(session);
      await setTokenStatus(db, shop, 'active', null);
      logger.debug({ shop, expires: session.expires?.toISOString() }, 'Shopify access token refreshed');
      return session;
    } catch (err) {
      // Another process may have used the refresh token first; then its result is stored.
      const latest = await load(shop).catch(() => null);
      if (latest && latest.accessToken !== current.accessToken && stillValid(latest)) return latest;
      const failure = classifyShopifyError(err);
      const detail = [failure.status && `HTTP ${failure.status}`, failure.code].filter(Boolean).join(' ') || 'no answer';
      const sentence =
        failure.kind === 'rejected'
          ? `Shopify refused to refresh the access token (${detail}); the merchant must open the app again to renew access.`
          : `Shopify could not be reached to refresh the access token (${detail}); it will be retried.`;
      await setTokenStatus(db, shop, 'refresh_failed', sentence).catch(() => undefined);
      logger.warn({ shop, failure: describeShopifyError(err) }, 'Shopify token refresh failed');
      return fallback;
    }
  }

  const refreshLatest = (shop: string, force: boolean) =>
    once(`refresh:${shop}`, async () => {
      const current = await load(shop);
      if (!current) return null;
      if (!force && !expiresSoon(current)) return current; // refreshed meanwhile
      return refresh(shop, current);
    });

  return {
    async getOfflineSession(input) {
      const shop = sanitizeShop(input);
      if (!shop) return null;
      routeShop(shopify, shop);
      const session = await load(shop);
      if (!session) return null;
      return expiresSoon(session) ? refreshLatest(shop, false) : session;
    },

    async refreshOfflineSession(input) {
      const shop = sanitizeShop(input);
      return shop ? refreshLatest(shop, true) : null;
    },

    exchangeSessionToken(input, sessionToken, seenAt) {
      const shop = sanitizeShop(input);
      if (!shop) return Promise.reject(new Error('invalid shop domain'));
      const last = exchanged.get(shop);
      if (last && seenAt !== undefined && last.at >= seenAt && stillValid(last.session)) return Promise.resolve(last.session);
      return once(`exchange:${shop}`, async () => {
        routeShop(shopify, shop);
        const { session } = await shopify.auth.tokenExchange({
          shop,
          sessionToken,
          requestedTokenType: RequestedTokenType.OfflineAccessToken,
          expiring: true,
        });
        await sessions.storeSession(session);
        const now = Date.now();
        // insertion order is time order: drop from the front what is over a minute old
        for (const [key, entry] of exchanged) {
          if (now - entry.at <= 60_000) break;
          exchanged.delete(key);
        }
        exchanged.delete(shop);
        exchanged.set(shop, { session, at: now });
        logger.info(
          { shop, expiring: Boolean(session.expires), hasRefreshToken: Boolean(session.refreshToken) },
          'offline token obtained by token exchange',
        );
        return session;
      });
    },

    async saveOfflineSession(session) {
      await sessions.storeSession(session);
    },
  };
}

/** Sets the Shop row's token state (no-op when there is no row). `error` is a sentence, never a token. */
export async function setTokenStatus(db: Db, shop: string, status: TokenStatus, error: string | null): Promise<void> {
  if (status === 'active') {
    // Most calls find it already active: skip the write then.
    await db.shop.updateMany({
      where: { domain: shop, OR: [{ tokenStatus: { not: 'active' } }, { tokenError: { not: null } }] },
      data: { tokenStatus: 'active', tokenError: null },
    });
    return;
  }
  await db.shop.updateMany({ where: { domain: shop }, data: { tokenStatus: status, tokenError: error } });
}
