// Authentication of /api/*: the App Bridge session token (HS256 JWT, aud = API key, dest =
// https://{shop}). A shop's first request without a usable offline token performs token
// exchange and records the install. Downstream routes read res.locals.shop.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Db } from '../db/client';
import type { Logger } from '../observability/logger';
import { scrubSecrets, type ShopifyApi } from '../integrations/shopify/api';
import { classifyShopifyError, describeShopifyError } from '../integrations/shopify/errors';
import { ensureShopIdentity, recordInstall, type InstalledShop } from '../integrations/shopify/install';
import { shopFromDest } from '../integrations/shopify/sanitize';
import type { OfflineTokens } from '../integrations/shopify/tokens';
import { sendError } from './errors';

export interface SessionTokenDeps {
  shopify: ShopifyApi;
  db: Db;
  tokens: OfflineTokens;
  logger: Logger;
  /** A reinstall queued held deliveries again (see shopify/install.ts). */
  onResumed?: (shopId: string) => void;
}

/** What the middleware leaves in res.locals.shop: the Shop row's id and domain. */
export type ShopLocals = InstalledShop;

export const RETRY_HEADER = 'X-Shopify-Retry-Invalid-Session-Request';

/** The authenticated shop of a request that went through sessionTokenMiddleware. */
export function shopOf(res: Response): ShopLocals {
  const shop = res.locals.shop as ShopLocals | undefined;
  if (!shop) throw new Error('shopOf: the session-token middleware did not run for this route');
  return shop;
}

function unauthorized(res: Response, code: string, message: string): void {
  res.setHeader(RETRY_HEADER, '1');
  sendError(res, 401, code, message);
}

export function sessionTokenMiddleware(deps: SessionTokenDeps): RequestHandler {
  const { shopify, db, tokens, logger } = deps;

  return async (req: Request, res: Response, next: NextFunction) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
    if (!match)
      return unauthorized(res, 'missing_session_token', 'This request needs a Shopify session token; open the app from the Shopify admin');
    const jwt = match[1]!;

    let shop: string | null;
    try {
      // Never log this error's message: the library quotes the token in it.
      const payload = await shopify.session.decodeSessionToken(jwt);
      shop = shopFromDest(payload.dest);
      if (shop && shopFromDest(String(payload.iss ?? '').replace(/\/admin\/?$/, '')) !== shop) shop = null;
    } catch (err) {
      logger.debug({ failure: describeShopifyError(err), path: req.path }, 'session token rejected');
      return unauthorized(res, 'invalid_session_token', 'The Shopify session token is invalid or has expired');
    }
    if (!shop) return unauthorized(res, 'invalid_session_token', 'The Shopify session token names no valid shop');

    try {
      const seenAt = Date.now();
      const row = await db.shop.findUnique({
        where: { domain: shop },
        select: { id: true, domain: true, shopifyId: true, uninstalledAt: true, tokenStatus: true },
      });
      // After an uninstall (or a token Shopify revoked) a stored session is stale: exchange anew.
      const stale = Boolean(row?.uninstalledAt) || row?.tokenStatus === 'revoked';
      let session = stale ? null : await tokens.getOfflineSession(shop);
      let installed: InstalledShop;
      if (!session) {
        try {
          session = await tokens.exchangeSessionToken(shop, jwt, seenAt);
        } catch (err) {
          const failure = classifyShopifyError(err);
          logger.warn({ shop, failure: describeShopifyError(err) }, 'token exchange failed');
          if (failure.kind === 'rejected' || failure.kind === 'invalid') {
            return unauthorized(res, 'token_exchange_failed', 'Shopify refused to grant access for this shop; reload the app to try again');
          }
          return sendError(res, 502, 'shopify_unavailable', 'Shopify could not be reached to complete the installation; please retry');
        }
        installed = await recordInstall({ shopify, db, logger, onResumed: deps.onResumed }, session);
      } else if (!row) {
        installed = await recordInstall({ shopify, db, logger, onResumed: deps.onResumed }, session);
      } else {
        installed = { id: row.id, domain: row.domain };
        if (!row.shopifyId) await ensureShopIdentity({ shopify, db, logger }, session);
      }
      res.locals.shop = installed satisfies ShopLocals;
      next();
    } catch (err) {
      // Database or unexpected failures: keep library/Prisma text (which may quote arguments) out of logs.
      logger.error(
        { shop, err: (err as Error)?.name, message: scrubSecrets(String((err as Error)?.message ?? '')).slice(0, 300) },
        'session-token middleware failed',
      );
      sendError(res, 500, 'internal_error', 'Something went wrong on our side; please retry');
    }
  };
}
