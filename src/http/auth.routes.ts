// The authorization-code grant, for installs that do not come through the embedded admin:
// GET /auth?shop= redirects to Shopify's consent page; GET /auth/callback verifies hmac,
// timestamp (±90 s) and state (signed cookie), obtains an expiring offline token, and records
// the install. Embedded installs use token exchange instead (session-token.ts).
import { Router, type Request, type Response } from 'express';
import type { Db } from '../db/client';
import type { Logger } from '../observability/logger';
import { adminOriginOf, routeShop, scrubSecrets, type ShopifyApi } from '../integrations/shopify/api';
import { classifyShopifyError, describeShopifyError } from '../integrations/shopify/errors';
import { recordInstall } from '../integrations/shopify/install';
import { sanitizeShop } from '../integrations/shopify/sanitize';
import type { OfflineTokens } from '../integrations/shopify/tokens';
import { sendError } from './errors';

export interface AuthRoutesDeps {
  shopify: ShopifyApi;
  db: Db;
  tokens: OfflineTokens;
  logger: Logger;
  /** A reinstall queued held deliveries again (see shopify/install.ts). */
  onResumed?: (shopId: string) => void;
}

export const AUTH_PATH = '/auth';
export const CALLBACK_PATH = '/auth/callback';

export function authRoutes(deps: AuthRoutesDeps): Router {
  const { shopify, db, tokens, logger } = deps;
  const router = Router();

  router.get(AUTH_PATH, async (req: Request, res: Response) => {
    const shop = sanitizeShop(req.query.shop);
    if (!shop) return sendError(res, 400, 'invalid_shop', 'The shop parameter must be a shop domain such as my-store.myshopify.com');
    try {
      // Sends the 302 to Shopify's consent page itself, with the signed state cookie.
      await shopify.auth.begin({ shop, callbackPath: CALLBACK_PATH, isOnline: false, rawRequest: req, rawResponse: res });
    } catch (err) {
      logger.error({ shop, failure: describeShopifyError(err) }, 'could not start the authorization-code grant');
      if (!res.headersSent) sendError(res, 500, 'internal_error', 'Could not start the installation; please retry');
    }
  });

  router.get(CALLBACK_PATH, async (req: Request, res: Response) => {
    const shop = sanitizeShop(req.query.shop);
    if (!shop) return sendError(res, 400, 'invalid_shop', 'The shop parameter must be a shop domain such as my-store.myshopify.com');
    routeShop(shopify, shop);
    let session;
    try {
      ({ session } = await shopify.auth.callback({ rawRequest: req, rawResponse: res, expiring: true }));
    } catch (err) {
      const failure = classifyShopifyError(err);
      if (failure.kind === 'invalid') {
        // InvalidOAuthError (hmac or state), InvalidHmacError (timestamp), CookieNotFound, BotActivityDetected
        logger.warn({ shop, reason: describeShopifyError(err) }, 'authorization callback rejected');
        return sendError(
          res,
          400,
          'invalid_oauth_callback',
          'The installation link is invalid or has expired; start the installation again',
        );
      }
      logger.warn({ shop, failure: describeShopifyError(err) }, 'authorization code could not be exchanged');
      if (failure.kind === 'rejected') {
        return sendError(res, 400, 'oauth_code_rejected', 'Shopify refused the authorization code; start the installation again');
      }
      return sendError(res, 502, 'shopify_unavailable', 'Shopify could not be reached to complete the installation; please retry');
    }
    try {
      await tokens.saveOfflineSession(session);
      await recordInstall({ shopify, db, logger, onResumed: deps.onResumed }, session);
    } catch (err) {
      logger.error(
        { shop, err: (err as Error)?.name, message: scrubSecrets(String((err as Error)?.message ?? '')).slice(0, 300) },
        'could not record the install',
      );
      return sendError(res, 500, 'internal_error', 'Could not record the installation; please retry');
    }
    res.redirect(302, afterInstallUrl(shopify, session.shop, req.query.host));
  });

  return router;
}

/** Into the Shopify admin (the embedded app) when `host` is valid; else the app's own page. */
function afterInstallUrl(shopify: ShopifyApi, shop: string, hostParam: unknown): string {
  const host = typeof hostParam === 'string' ? shopify.utils.sanitizeHost(hostParam) : null;
  // With SHOPIFY_ADMIN_ORIGIN the admin is simulated, so stay on the app.
  if (host && !adminOriginOf(shopify)) return shopify.auth.buildEmbeddedAppUrl(host);
  const q = new URLSearchParams({ shop, ...(host ? { host } : {}) });
  return `/?${q.toString()}`;
}
