// POST /proxy/back-in-stock: the storefront's notify-me form, forwarded by Shopify's app proxy
// (`/apps/email-connector/back-in-stock` on the shop's domain). The query's signature and
// timestamp are checked before anything else is read; then the body (form-encoded or JSON, at
// most 8 KB) goes to the notify-me use case. Every answer is JSON the block shows:
//   201 / 200  {"ok": true, "message", ...}: subscribed, renewed, or in stock already (nothing stored)
//   401  missing, wrong or stale signature: nothing read, nothing stored
//   405  another method         413  over 8 KB         415  another content type
//   422  no variant, a guest without a valid email, a customer without one, a variant Shopify does not have
//   429  over a limit (Retry-After)        503  Shopify or the database unavailable, or the shop cannot take alerts
// The shopper's address is the one Shopify's proxy puts in X-Forwarded-For: one hop past ours.
import express, { Router, type ErrorRequestHandler, type Request, type Response } from 'express';
import { verifyAppProxy } from '../integrations/shopify/app-proxy';
import { clientAddress, ipKey } from '../intake/client-ip';
import { MESSAGES, type NotifyMe, type NotifyMeRefusal } from '../notify-me/use-case';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { sendError } from './errors';

export const PROXY_BACK_IN_STOCK_PATH = '/proxy/back-in-stock';
export const PROXY_BODY_LIMIT = 8 * 1024;

export interface ProxyRouteDeps {
  apiSecret: string;
  notifyMe: NotifyMe;
  logger: Logger;
  metrics: Metrics;
  now?: () => Date;
  /** Proxies of our own in front of the app (TRUST_PROXY); Shopify's proxy is one more. */
  trustProxyHops: number;
}

const REFUSAL_STATUS: Readonly<Record<NotifyMeRefusal, number>> = {
  invalid_request: 422,
  email_required: 422,
  invalid_email: 422,
  no_email: 422,
  unknown_variant: 422,
  rate_limited: 429,
  unavailable: 503,
  not_available: 503,
};

const FORM = /^\s*application\/x-www-form-urlencoded\s*(;|$)/i;
const JSON_TYPE = /^\s*application\/json\s*(;|$)/i;

const rawQuery = (req: Request) => {
  const at = req.originalUrl.indexOf('?');
  return at < 0 ? '' : req.originalUrl.slice(at + 1);
};

export function proxyRoute(deps: ProxyRouteDeps): Router {
  const r = Router();
  const now = deps.now ?? (() => new Date());
  const count = (outcome: string) => deps.metrics.notifyMeRequests.inc({ outcome });
  const noStore = (res: Response) => res.set('Cache-Control', 'no-store');

  r.post(
    PROXY_BACK_IN_STOCK_PATH,
    (req, res, next) => {
      noStore(res);
      const check = verifyAppProxy(rawQuery(req), deps.apiSecret, now().getTime());
      if (!check.ok) {
        count(check.reason === 'stale' ? 'stale' : 'bad_signature');
        return sendError(res, 401, 'unauthorized', 'This request was not signed by Shopify');
      }
      const type = req.headers['content-type'] ?? '';
      if (!FORM.test(type) && !JSON_TYPE.test(type)) {
        count('invalid_request');
        return sendError(res, 415, 'unsupported_media_type', 'Send the form as application/x-www-form-urlencoded or application/json');
      }
      res.locals.proxy = check;
      next();
    },
    express.urlencoded({ extended: false, limit: PROXY_BODY_LIMIT, parameterLimit: 20, inflate: false }),
    express.json({ limit: PROXY_BODY_LIMIT, strict: true, inflate: false }),
    async (req, res) => {
      const check = res.locals.proxy as Extract<ReturnType<typeof verifyAppProxy>, { ok: true }>;
      let result: Awaited<ReturnType<NotifyMe['request']>>;
      try {
        result = await deps.notifyMe.request({
          shop: check.shop,
          loggedInCustomerId: check.loggedInCustomerId,
          clientKey: ipKey(clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], deps.trustProxyHops + 1)),
          body: req.body as unknown,
        });
      } catch (err) {
        deps.logger.error({ err: (err as Error).message }, 'notify-me request failed; answered 503, nothing stored');
        result = { kind: 'refused', code: 'unavailable', message: MESSAGES.unavailable, retryAfterSec: 5 };
      }
      switch (result.kind) {
        case 'subscribed':
          count(result.created ? 'created' : 'renewed');
          return res.status(result.created ? 201 : 200).json({
            ok: true,
            message: result.message,
            subscription: { variant_id: result.variantId, product_id: result.productId, expires_at: result.expiresAt.toISOString() },
          });
        case 'in_stock':
          count('in_stock');
          return res.status(200).json({ ok: true, in_stock: true, message: result.message });
        default:
          count(result.code);
          if (result.retryAfterSec !== undefined) res.set('Retry-After', String(result.retryAfterSec));
          return sendError(res, REFUSAL_STATUS[result.code], result.code, result.message);
      }
    },
  );

  r.all(PROXY_BACK_IN_STOCK_PATH, (_req, res) => {
    noStore(res);
    res.set('Allow', 'POST');
    sendError(res, 405, 'method_not_allowed', 'POST the form to subscribe');
  });

  // errors of the body readers (too large, malformed, encoded): a JSON 4xx, never a 5xx
  const onError: ErrorRequestHandler = (err, _req, res, _next) => {
    noStore(res);
    const e = err as { type?: string; status?: number };
    if (e.type === 'entity.too.large') {
      count('invalid_request');
      return sendError(res, 413, 'payload_too_large', `The form is over ${PROXY_BODY_LIMIT} bytes`);
    }
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') {
      count('invalid_request');
      return sendError(res, 415, 'unsupported_encoding', 'Unsupported body encoding');
    }
    count('invalid_request');
    sendError(
      res,
      typeof e.status === 'number' && e.status >= 400 && e.status < 500 ? e.status : 400,
      'bad_request',
      'The form could not be read',
    );
  };
  r.use(PROXY_BACK_IN_STOCK_PATH, onError);
  return r;
}
