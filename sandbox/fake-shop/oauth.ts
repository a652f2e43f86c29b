// Fake /admin/oauth: the consent page (redirects back with a signed code) and the token endpoint
// with its three grants: authorization code, token exchange, and rotating refresh tokens.
import { createHmac } from 'node:crypto';
import express, { Router, type Request, type Response } from 'express';
import { verifyHs256 } from './jwt';
import type { FakeShopState } from './state';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';
const OFFLINE_TOKEN = 'urn:shopify:params:oauth:token-type:offline-access-token';

/** Shopify's OAuth query HMAC: hex HMAC-SHA256 of the other params, sorted, joined with `&`. */
export function signOAuthQuery(params: Record<string, string>, secret: string): string {
  const q = new URLSearchParams();
  for (const key of Object.keys(params)
    .filter((k) => k !== 'hmac' && k !== 'signature')
    .sort((a, b) => a.localeCompare(b))) {
    q.append(key, params[key]!);
  }
  return createHmac('sha256', secret).update(q.toString().replace(/\+/g, '%20')).digest('hex');
}

/**
 * What the consent page does when the merchant approves: the callback URL, with code, hmac,
 * host, shop, state and timestamp. `authorizeUrl` is the Location the app's /auth answered.
 */
export function approveAuthorization(
  state: FakeShopState,
  authorizeUrl: string,
  shopHint?: string,
): { status: number; location?: string; error?: string } {
  const url = new URL(authorizeUrl);
  const q = url.searchParams;
  const shop = (shopHint ?? q.get('shop') ?? url.hostname).toLowerCase();
  if (!state.shops.has(shop)) return { status: 404, error: `unknown shop ${shop}` };
  if (q.get('client_id') !== state.opts.apiKey) return { status: 400, error: 'unknown client_id' };
  const redirectUri = q.get('redirect_uri');
  const appState = q.get('state');
  if (!redirectUri || !appState) return { status: 400, error: 'redirect_uri and state are required' };
  const params: Record<string, string> = {
    code: state.newCode(shop),
    host: Buffer.from(`${shop}/admin`).toString('base64').replace(/=+$/, ''),
    shop,
    state: appState,
    timestamp: String(Math.floor(Date.now() / 1000)),
  };
  params.hmac = signOAuthQuery(params, state.opts.apiSecret);
  const back = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) back.searchParams.set(k, v);
  return { status: 302, location: back.toString() };
}

export function oauthRoutes(state: FakeShopState): Router {
  const router = Router();
  const { apiKey, apiSecret } = state.opts;

  // The browser reaches https://{shop}/admin/oauth/authorize; here the shop comes from the
  // `shop` query parameter or the Host header.
  router.get('/admin/oauth/authorize', (req: Request, res: Response) => {
    const host = String(req.headers['x-forwarded-host'] ?? req.headers.host ?? '').replace(/:\d+$/, '');
    const shopHint = typeof req.query.shop === 'string' ? req.query.shop : state.shops.has(host) ? host : undefined;
    const full = `http://fake${req.originalUrl}`;
    const result = approveAuthorization(state, full, shopHint);
    if (result.location) return res.redirect(302, result.location);
    res.status(result.status).json({ error: result.error });
  });

  router.post('/admin/oauth/access_token', express.json(), express.urlencoded({ extended: false }), (req: Request, res: Response) => {
    const injected = state.takeFailure('access_token');
    if (injected) return res.status(injected.status).json({ error: 'injected_failure' });
    const body = (req.body ?? {}) as Record<string, string | undefined>;
    if (body.client_id !== apiKey || body.client_secret !== apiSecret) {
      return res.status(401).json({ error: 'invalid_client', error_description: 'Unknown client_id or wrong client_secret' });
    }
    const expiring = body.expiring === '1' || body.expiring === 'true';
    const fail = (error: string, description: string, status = 400) => res.status(status).json({ error, error_description: description });

    if (body.grant_type === 'refresh_token') {
      const used = body.refresh_token ? state.consumeRefreshToken(body.refresh_token) : { ok: false };
      if (!used.ok || !used.shop) return fail('invalid_grant', 'The refresh token is invalid, expired, revoked or already used');
      return res.json(state.issue(used.shop, true));
    }

    if (body.grant_type === TOKEN_EXCHANGE) {
      if (body.subject_token_type !== ID_TOKEN) return fail('invalid_request', 'subject_token_type must be an id_token');
      if (body.requested_token_type !== OFFLINE_TOKEN) return fail('invalid_request', 'the fake shop issues offline access tokens only');
      const claims = body.subject_token ? verifyHs256(body.subject_token, apiSecret) : null;
      if (!claims || claims.aud !== apiKey)
        return fail('invalid_subject_token', 'The session token is invalid, expired, or for another app');
      const shop = typeof claims.dest === 'string' ? new URL(claims.dest).hostname : '';
      if (!state.shops.has(shop)) return fail('invalid_subject_token', 'The session token is for an unknown shop');
      state.statsFor(shop).exchanges++;
      return res.json(state.issue(shop, expiring));
    }

    if (body.code !== undefined && (body.grant_type === undefined || body.grant_type === 'authorization_code')) {
      const shop = state.consumeCode(body.code);
      if (!shop) return fail('invalid_grant', 'The authorization code is invalid, expired or already used');
      state.statsFor(shop).codeGrants++;
      return res.json(state.issue(shop, expiring));
    }

    return fail('unsupported_grant_type', 'grant_type is not supported by the fake shop');
  });
  return router;
}
