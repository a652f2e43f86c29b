// The fake shop's app proxy, as Shopify's (`[app_proxy]` in shopify.app.toml: prefix "apps",
// subpath "email-connector", url "<app url>/proxy"): a storefront request to
// `/apps/email-connector/<path>` goes to `<app url>/proxy/<path>` with the same method, body and
// query, plus `shop`, `logged_in_customer_id` (empty for a guest), `path_prefix`, `timestamp` and
// `signature` (signed with the app's secret as Shopify does), and the shopper's address in
// X-Forwarded-For. Cookies stay behind. The app's answer comes back as it is.
import express, { Router, type Request } from 'express';
import { signAppProxy } from '../../src/integrations/shopify/app-proxy';

export const APP_PROXY_PREFIX = '/apps/email-connector';

export interface AppProxyOptions {
  /** The app's base URL; requests go to `${appUrl}/proxy/...`. */
  appUrl: string;
  apiSecret: string;
  /** The shop's myshopify domain. */
  shop: () => string;
  /** The logged-in customer's id, or null for a guest. */
  customerId: (req: Request) => string | null;
  /** Epoch ms (tests sign with a clock of their own). */
  nowMs?: () => number;
}

/** The query Shopify would forward for `original` (the storefront request's own query), signed. */
export function forwardedQuery(
  original: URLSearchParams,
  o: { shop: string; customerId: string | null; secret: string; nowMs: number; pathPrefix?: string },
): string {
  const params: Array<[string, string]> = [...original.entries()].filter(([k]) => k !== 'signature');
  params.push(
    ['shop', o.shop],
    ['logged_in_customer_id', o.customerId ?? ''],
    ['path_prefix', o.pathPrefix ?? APP_PROXY_PREFIX],
    ['timestamp', String(Math.floor(o.nowMs / 1000))],
  );
  const q = new URLSearchParams(params);
  q.append('signature', signAppProxy(params, o.secret));
  return q.toString();
}

const HOP_HEADERS = new Set(['content-type', 'accept', 'accept-language', 'user-agent']);

export function appProxyRoutes(o: AppProxyOptions): Router {
  const r = Router();
  const target = `${o.appUrl.replace(/\/+$/, '')}/proxy`;
  r.use(APP_PROXY_PREFIX, express.raw({ type: () => true, limit: '64kb' }), async (req, res) => {
    const at = req.url.indexOf('?');
    const path = at < 0 ? req.url : req.url.slice(0, at);
    const query = forwardedQuery(new URLSearchParams(at < 0 ? '' : req.url.slice(at + 1)), {
      shop: o.shop(),
      customerId: o.customerId(req),
      secret: o.apiSecret,
      nowMs: (o.nowMs ?? Date.now)(),
    });
    const headers: Record<string, string> = { 'x-forwarded-for': req.socket.remoteAddress ?? '127.0.0.1' };
    for (const [k, v] of Object.entries(req.headers)) if (HOP_HEADERS.has(k) && typeof v === 'string') headers[k] = v;
    const hasBody = !['GET', 'HEAD'].includes(req.method) && Buffer.isBuffer(req.body) && req.body.length > 0;
    try {
      const answer = await fetch(`${target}${path === '/' ? '' : path}?${query}`, {
        method: req.method,
        headers,
        body: hasBody ? new Uint8Array(req.body as Buffer) : undefined,
        redirect: 'manual',
      });
      const body = Buffer.from(await answer.arrayBuffer());
      res.status(answer.status);
      for (const name of ['content-type', 'retry-after', 'cache-control']) {
        const v = answer.headers.get(name);
        if (v) res.set(name, v);
      }
      res.send(body);
    } catch {
      // Shopify shows its own error page when the app does not answer
      res.status(502).type('text/plain').send('The app did not answer the app proxy request');
    }
  });
  return r;
}
