// A fake Shopify for tests and `npm run dev`. Point the app at it with SHOPIFY_ADMIN_ORIGIN=url:
// it answers the OAuth token endpoint (code grant, token exchange, rotating refresh tokens),
// the consent page, and Admin GraphQL (shop, products and their variants' stock, customers, web
// pixels, granted scopes, within a query cost bucket); it also mints App Bridge session tokens,
// signs webhooks, and with a storefront forwards its app proxy to the app, signed.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { DEFAULT_SCOPES } from '../src/config';
import { graphqlRoutes, shopQueryHandler, type GraphqlHandler } from './fake-shop/graphql';
import { signHs256, type SessionTokenClaims } from './fake-shop/jwt';
import { approveAuthorization, oauthRoutes, signOAuthQuery } from './fake-shop/oauth';
import { storefrontRoutes, type StorefrontOptions } from './fake-shop/storefront';
import {
  FakeShopState,
  type Degradation,
  type FailEndpoint,
  type FakeShopInit,
  type FakeShopRecord,
  type ScopesUpdatePayload,
  type TokenStats,
} from './fake-shop/state';
import { catalogHandler, FakeCatalog, productImageRoutes, sampleProducts, type FakeProductInit } from './fake-shop/catalog';
import { CostBuckets, type ThrottleStatus } from './fake-shop/cost';
import { customerByIdHandler, customersHandler, FakeCustomers, type FakeCustomerInit } from './fake-shop/customers';
import { changePrice, changeStock, FakeStock, variantHandler, type StockChange, type StockWebhook } from './fake-shop/stock';
import { accessScopesHandler, pixelHandler, type FakePixel } from './fake-shop/pixels';
import { deliverWebhook, signWebhook, type SignedWebhook, type WebhookOptions } from './fake-shop/webhooks';

export type {
  FakeShopInit,
  FakeShopRecord,
  TokenStats,
  GraphqlHandler,
  SessionTokenClaims,
  WebhookOptions,
  SignedWebhook,
  StorefrontOptions,
};
export type { GraphqlRequest } from './fake-shop/graphql';
export type { FakeProductInit, FakePixel, ScopesUpdatePayload, ThrottleStatus, FakeCustomerInit, Degradation, StockChange };
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
  /** Scopes every shop starts with (FakeShopInit.scopes sets one shop's); tokens report the shop's. */
  scopes?: string;
  /** Serves a storefront at `url` that runs the app's web pixel (sandbox/fake-shop/storefront.ts). */
  storefront?: StorefrontOptions;
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
  /** The scopes the shop has granted the app now. */
  grantedScopes(domain: string): string[];
  /**
   * The merchant grants optional scopes (Shopify's grant modal). Existing tokens carry them at
   * once, as on Shopify; returns the app/scopes_update payload to send (see sendWebhook).
   */
  grantScopes(domain: string, scopes: string[]): ScopesUpdatePayload;
  /** The merchant revokes scopes; returns the app/scopes_update payload. */
  revokeScopes(domain: string, scopes: string[]): ScopesUpdatePayload;
  /** The app's active web pixel on the shop (its id and settings JSON string), or null. */
  webPixel(domain: string): FakePixel | null;
  /** Adds a customer the Admin API knows (every shop starts with the sandbox storefront's logged-in customer). */
  addCustomer(domain: string, customer: FakeCustomerInit): void;
  removeCustomer(domain: string, email: string): boolean;
  /** customers(query:) calls the shop answered. */
  customerQueries(domain: string): number;
  /** Adds or replaces a product the Admin API knows (every shop starts with the sample products). */
  addProduct(domain: string, product: FakeProductInit): void;
  removeProduct(domain: string, productId: string): boolean;
  /** Sets the shop's GraphQL cost bucket (2000 points restoring 100/s by default). */
  setThrottle(domain: string, status: Partial<ThrottleStatus>): void;
  /**
   * The shop's Admin GraphQL answers slowly or fails (a 5xx) for the queries `only` matches, until
   * the returned function is called (a slow answer already waiting still comes).
   */
  degrade(domain: string, how: Degradation): () => void;
  /** nodes(ids:) calls the shop answered (products and variants), and the ids they asked for. */
  productLookups(domain: string): Array<{ ids: string[] }>;
  /** A variant's stock now (every variant starts with 10, the storefront's small Merino Socks with 0). */
  inventory(domain: string, variantId: string): number;
  /**
   * Sets a variant's stock, as the merchant would; returns the webhooks Shopify would send the app
   * (variants/in_stock or variants/out_of_stock when it crossed zero, then products/update), for
   * sendWebhook. Null for a variant the shop does not have.
   */
  setInventory(domain: string, variantId: string, quantity: number): StockChange | null;
  /**
   * Sets a variant's price, as the merchant would, at `at` (default now: its updated_at); returns
   * the products/update Shopify would send the app (null: no such variant).
   */
  setPrice(domain: string, variantId: string, price: number, at?: Date): StockWebhook | null;
}

export async function startFakeShop(opts: FakeShopOptions): Promise<FakeShop> {
  const state = new FakeShopState({
    apiKey: opts.apiKey,
    apiSecret: opts.apiSecret,
    scopes: opts.scopes ?? DEFAULT_SCOPES,
    accessTokenTtlSec: opts.accessTokenTtlSec ?? 3600,
    refreshTokenTtlSec: opts.refreshTokenTtlSec ?? 90 * 24 * 3600,
  });
  for (const s of opts.shops ?? []) state.addShop(s);
  const costs = new CostBuckets();
  const catalog = new FakeCatalog(() => sampleProducts(url));
  const pixels = new Map<string, FakePixel>();
  const customers = new FakeCustomers();
  const stock = new FakeStock();
  const handlers: GraphqlHandler[] = [
    catalogHandler(state, catalog, costs, (shop, variantId) => stock.available(shop, variantId)),
    variantHandler(state, catalog, stock, costs),
    customersHandler(state, customers, costs),
    customerByIdHandler(state, customers, costs),
    pixelHandler(state, pixels, costs),
    accessScopesHandler(state, costs),
    shopQueryHandler,
  ];

  const app = express();
  app.disable('x-powered-by');
  app.use(oauthRoutes(state));
  app.use(graphqlRoutes(state, handlers));
  app.use(productImageRoutes());
  if (opts.storefront) app.use(storefrontRoutes(state, opts.storefront, { catalog, stock }));
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
    grantedScopes: (domain) => state.scopesOf(domainOf(domain)),
    grantScopes: (domain, scopes) => state.changeScopes(domainOf(domain), scopes),
    revokeScopes: (domain, scopes) => state.changeScopes(domainOf(domain), [], scopes),
    webPixel: (domain) => {
      const pixel = pixels.get(domainOf(domain));
      return pixel ? { ...pixel } : null;
    },
    addCustomer: (domain, customer) => customers.add(domainOf(domain), customer),
    removeCustomer: (domain, email) => customers.remove(domainOf(domain), email),
    customerQueries: (domain) => customers.queries.get(domainOf(domain)) ?? 0,
    addProduct: (domain, product) => catalog.add(domainOf(domain), product),
    removeProduct: (domain, productId) => catalog.remove(domainOf(domain), productId),
    setThrottle: (domain, status) => costs.set(domainOf(domain), status),
    degrade: (domain, how) => state.degrade(domainOf(domain), how),
    productLookups: (domain) => catalog.lookups(domainOf(domain)),
    inventory: (domain, variantId) => stock.quantity(domainOf(domain), variantId),
    setInventory: (domain, variantId, quantity) => changeStock(domainOf(domain), catalog, stock, variantId, quantity),
    setPrice: (domain, variantId, price, at) => changePrice(domainOf(domain), catalog, stock, variantId, price, at),
  };
}
