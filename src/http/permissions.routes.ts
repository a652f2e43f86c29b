// /api/permissions and /api/pixel: the optional features (product images, storefront pixel), the
// scopes they need, the storefront pixel's activation, and its trust checks of the last day
// (GET /api/pixel's `activity`). Behind the session-token middleware.
import { Router, type RequestHandler } from 'express';
import type { StorefrontActivity } from '../admin/storefront-activity';
import type { WebPixels } from '../integrations/shopify/web-pixel';
import type { PermissionsUseCases } from '../admin/permissions';
import { HttpError } from './errors';
import { shopOf } from './session-token';

export interface PermissionsRoutesDeps {
  auth: RequestHandler;
  permissions: PermissionsUseCases;
  webPixels: Pick<WebPixels, 'ensureActive' | 'view'>;
  /** Pending identities now and the last day's counts (vouched, expired, products dropped, events limited). */
  storefrontActivity: (shopId: string) => Promise<StorefrontActivity>;
}

function refreshParam(v: unknown): boolean {
  if (v === undefined) return false;
  if (v === '1' || v === 'true') return true;
  if (v === '0' || v === 'false') return false;
  throw new HttpError(400, 'invalid_request', 'refresh: must be 1 or 0');
}

export function permissionsRoutes(deps: PermissionsRoutesDeps): Router {
  const r = Router();
  // another router may already have authenticated this request
  r.use(['/api/permissions', '/api/pixel'], (req, res, next) => (res.locals.shop ? next() : deps.auth(req, res, next)));

  r.get('/api/permissions', async (req, res) => {
    res.json(await deps.permissions.get(shopOf(res), { refresh: refreshParam(req.query.refresh) }));
  });
  r.get('/api/pixel', async (_req, res) => {
    const shopId = shopOf(res).id;
    const [view, activity] = await Promise.all([deps.webPixels.view(shopId), deps.storefrontActivity(shopId)]);
    res.json({ ...view, activity });
  });
  r.post('/api/pixel/activate', async (_req, res) => {
    res.json(await deps.webPixels.ensureActive(shopOf(res)));
  });
  return r;
}
