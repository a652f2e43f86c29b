// A fake Shopify for tests and `npm run dev`. Point the app at it with SHOPIFY_ADMIN_ORIGIN=url:
// it answers the OAuth token endpoint (code grant, token exchange, rotating refresh tokens),
// the consent page, and Admin GraphQL; it also mints App Bridge session tokens and signs webhooks.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { graphqlRoutes, shopQueryHandler, type GraphqlHandler } from './fake-shop/graphql';
import { signHs256, type SessionTokenClaims } from './fake-shop/jwt';
import { approveAuthorization, oauthRoutes, signOAuthQuery } from './fake-shop/oauth';
import { FakeShopState, type FailEndpoint, type FakeShopInit, type FakeShopRecord, type TokenStats } from './fake-shop/state';
import { deliverWebhook, signWebhook, type SignedWebhook, type WebhookOptions } from './fake-shop/webhooks';

export type { FakeShopInit, FakeShopRecord, TokenStats, GraphqlHandler, SessionTokenClaims, WebhookOptions, SignedWebhook };
export type { GraphqlRequest } from './fake-shop/graphql';
export { signOAuthQuery };

export interface FakeShopOptions {
  apiKey: string;
  apiSecret: string;
  shops?: FakeShopInit[];
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /** Lifetime of expiring access tokens; Shopify's is 3600. */
  accessTokenTtlSec?: number;
  /** Lifetime of refresh tokens; default 90 days. */
  refreshTokenTtlSec?: number;
  /** Scopes reported with every token. */
  scopes?: string;
}

export type SessionTokenOverrides = Partial<SessionTokenClaims> & {
  /** Signs with this secret instead of the app's. */
  secret?: string;
};

export interface FakeShop {
  /** The origin to use as SHOPIFY_ADMIN_ORIGIN, e.g. http://127.0.0.1:51234 */
  url: string;
  close(): Promise<void>;
  addShop(shop: FakeShopInit): FakeShopRecord;
  getShop(domain: string): FakeShopRecord | undefined;
  /** An App Bridge session token for the shop (HS256 with the app secret, valid 60 s). */
  mintSessionToken(shopDomain: string, overrides?: SessionTokenOverrides): string;
  /** Signs and POSTs a webhook to `appUrl` (+ `/webhooks` when it has no path). */
  sendWebhook(appUrl: string, opts: WebhookOptions): Promise<{ status: number; body: unknown }>;
  /** The headers and raw body of a signed webhook, for supertest. */
  signedWebhookRequest(opts: WebhookOptions): SignedWebhook;
  /** The consent page's answer to the app's authorize URL: the callback URL with code and hmac. */
  approveAuthorization(authorizeUrl: string, shopDomain?: string): string;
  /** Counters and the latest tokens of a shop. */
  tokenStats(shopDomain: string): TokenStats;
  /** Like an uninstall: all the shop's access and refresh tokens stop working. */
  revokeTokens(shopDomain: string): void;
  /** The shop's access tokens expire now; its refresh tokens keep working. */
  expireAccessToken(shopDomain: string): void;
  /** The next `times` calls to the endpoint answer `status`. */
  failNext(endpoint: FailEndpoint, status: number, times?: number): void;
  /** Adds an Admin GraphQL handler, asked before the built-in ones. */
  addGraphqlHandler(handler: GraphqlHandler): void;
}

export async function startFakeShop(opts: FakeShopOptions): Promise<FakeShop> {
  const state = new FakeShopState({
    apiKey: opts.apiKey,
    apiSecret: opts.apiSecret,
    scopes: opts.scopes ?? 'read_orders,read_customers,read_checkouts',
    accessTokenTtlSec: opts.accessTokenTtlSec ?? 3600,
    refreshTokenTtlSec: opts.refreshTokenTtlSec ?? 90 * 24 * 3600,
  });
  for (const s of opts.shops ?? []) state.addShop(s);
  const handlers: GraphqlHandler[] = [shopQueryHandler];

  const app = express();
  app.disable('x-powered-by');
  app.use(oauthRoutes(state));
  app.use(graphqlRoutes(state, handlers));
  app.use((_req, res) => res.status(404).json({ errors: 'Not Found' }));

  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
  const url = `http://${opts.host ?? '127.0.0.1'}:${(server.address() as AddressInfo).port}`;
  const domainOf = (d: string) => d.toLowerCase();

  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    addShop: (shop) => state.addShop(shop),
    getShop: (domain) => state.shops.get(domainOf(domain)),
    mintSessionToken(shopDomain, overrides = {}) {
      const shop = domainOf(shopDomain);
      if (!state.shops.has(shop)) state.addShop({ domain: shop });
      const { secret, ...claims } = overrides;
      const now = Math.floor(Date.now() / 1000);
      const payload: SessionTokenClaims = {
        iss: `https://${shop}/admin`,
        dest: `https://${shop}`,
        aud: opts.apiKey,
        sub: '1',
        exp: now + 60,
        nbf: now,
        iat: now,
        jti: randomBytes(16).toString('hex'),
        sid: randomBytes(16).toString('hex'),
        ...claims,
      };
      return signHs256(payload, secret ?? opts.apiSecret);
    },
    sendWebhook: (appUrl, o) => deliverWebhook(opts.apiSecret, appUrl, o),
    signedWebhookRequest: (o) => signWebhook(opts.apiSecret, o),
    approveAuthorization(authorizeUrl, shopDomain) {
      const result = approveAuthorization(state, authorizeUrl, shopDomain && domainOf(shopDomain));
      if (!result.location) throw new Error(`fake shop refused the authorization: ${result.error}`);
      return result.location;
    },
    tokenStats: (shopDomain) => ({ ...state.statsFor(domainOf(shopDomain)) }),
    revokeTokens: (shopDomain) => state.revokeTokens(domainOf(shopDomain)),
    expireAccessToken: (shopDomain) => state.expireAccessTokens(domainOf(shopDomain)),
    failNext: (endpoint, status, times = 1) => state.failNext(endpoint, status, times),
    addGraphqlHandler: (handler) => void handlers.unshift(handler),
  };
}
