// The embedded admin page: `/` (index.html with the auth mode baked in), its static assets
// under /ui/, and the event catalog. In sandbox mode, and only when the composition root
// passes a minter, /_dev/* gives the page a session token for the simulated shop and lets it
// simulate webhooks and grant optional scopes; in production those routes are never registered.
import fs from 'node:fs';
import path from 'node:path';
import express, { Router, type Request, type Response } from 'express';
import { EVENT_TABLE, PRODUCT_ALERT_EVENT_TABLE, STOREFRONT_EVENT_TABLE } from '../mapping';
import { CONTACT_PROPERTY_DEFAULTS, CONTACT_PROPERTIES, EVENT_DEFAULTS, EVENT_NAMES, SETTING_LIMITS } from '../settings/settings';
import { OPTIONAL_SCOPES } from '../integrations/shopify/scopes';
import { DELIVERY_STATUSES } from '../admin/activity';
import { DEV_TOKEN_TTL_SEC, SHOP_DOMAIN } from './dev-session';
import { sendError } from './errors';

export const APP_BRIDGE_SRC = 'https://cdn.shopify.com/shopifycloud/app-bridge.js';
export const POLARIS_SRC = 'https://cdn.shopify.com/shopifycloud/polaris.js';
export const DEFAULT_DEV_SHOP = 'demo-store.myshopify.com';

export interface SandboxLink {
  label: string;
  href: string;
}

export interface UiRoutesDeps {
  config: { sandbox: boolean; production: boolean; shopify: { apiKey: string } };
  /** Sandbox only (ignored in production): mints a session token for a simulated shop. */
  mintDevSessionToken?: (shop: string) => string;
  /** Sandbox only: sends a signed sample webhook of `topic` for `shop` through the simulated shop. */
  simulate?: (topic: string, shop: string) => Promise<unknown>;
  /** Topics offered by the Simulate panel; defaults to every forwarded topic. */
  simulateTopics?: string[];
  /**
   * Sandbox only: the simulated shop grants optional scopes to the app, as App Bridge's
   * shopify.scopes.request does in the admin (and, like Shopify, sends app/scopes_update).
   */
  grantScopes?: (shop: string, scopes: string[]) => Promise<unknown>;
  /** Sandbox only: links shown in the dev panel (e.g. the emulator's /_sandbox/events). */
  sandboxLinks?: SandboxLink[];
  /**
   * Sandbox only: the simulated storefront's page of a sold-out variant, where the notify-me block
   * shows. The back-in-stock card links there instead of to Shopify's theme editor, which a
   * simulated shop does not have.
   */
  notifyMePreview?: SandboxLink;
  /** The shop the dev page acts as when the URL has no ?shop=. */
  devShop?: string;
  /** Where the page's files live; found next to the sources by default. */
  uiDir?: string;
}

/** The admin-ui folder: beside this file in src/, or src/admin-ui from a compiled dist/src/http. */
export function findUiDir(): string {
  const candidates = [path.resolve(__dirname, '../admin-ui'), path.resolve(__dirname, '../../../src/admin-ui')];
  const found = candidates.find((d) => fs.existsSync(path.join(d, 'index.html')));
  if (!found) throw new Error(`admin page files not found (looked in ${candidates.join(', ')})`);
  return found;
}

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The catalog the page renders its toggles from: the contract's table, never hard-coded twice. */
export function buildCatalog() {
  const topicsOf = (name: string) =>
    Object.entries({ ...EVENT_TABLE, ...STOREFRONT_EVENT_TABLE, ...PRODUCT_ALERT_EVENT_TABLE })
      .filter(([, events]) => (events as readonly string[]).includes(name))
      .map(([t]) => t);
  return {
    events: EVENT_NAMES.map((name) => ({ name, topics: topicsOf(name), default_on: EVENT_DEFAULTS[name] })),
    contact_properties: CONTACT_PROPERTIES.map((name) => ({ name, default_on: CONTACT_PROPERTY_DEFAULTS[name] })),
    abandonment_delay_minutes: { ...SETTING_LIMITS.abandonment_delay_minutes },
    price_drop_threshold_percent: { ...SETTING_LIMITS.price_drop_threshold_percent },
    storefront_settings: {
      browse_abandonment_delay_minutes: { ...SETTING_LIMITS.browse_abandonment_delay_minutes },
      cart_abandonment_delay_minutes: { ...SETTING_LIMITS.cart_abandonment_delay_minutes },
      storefront_events_per_email_day: { ...SETTING_LIMITS.storefront_events_per_email_day },
      storefront_abandonments_per_email_day: { ...SETTING_LIMITS.storefront_abandonments_per_email_day },
    },
    delivery_statuses: DELIVERY_STATUSES,
  };
}

function headFor(opts: { devMode: boolean; apiKey: string; devShop: string; simulate: boolean }): string {
  const meta = (name: string, content: string) => `<meta name="${name}" content="${escapeAttr(content)}">`;
  const lines = [meta('app-auth', opts.devMode ? 'dev' : 'app-bridge')];
  if (opts.devMode) {
    lines.push(meta('app-dev-shop', opts.devShop));
    if (opts.simulate) lines.push(meta('app-simulate', 'on'));
  } else {
    // App Bridge must be the first script, loaded synchronously (Shopify's requirement).
    lines.push(meta('shopify-api-key', opts.apiKey), `<script src="${APP_BRIDGE_SRC}"></script>`);
  }
  // Polaris web components when the CDN answers; the page's own CSS stands alone without them.
  lines.push(`<script async src="${POLARIS_SRC}"></script>`);
  return lines.join('\n    ');
}

/** frame-ancestors for an embedded app: the shop's admin and admin.shopify.com. */
function frameAncestors(req: Request): string {
  const shop = typeof req.query.shop === 'string' ? req.query.shop.toLowerCase() : '';
  return `frame-ancestors ${SHOP_DOMAIN.test(shop) ? `https://${shop} ` : ''}https://admin.shopify.com`;
}

export function uiRoutes(deps: UiRoutesDeps): Router {
  const { config } = deps;
  const uiDir = deps.uiDir ?? findUiDir();
  const devMode = config.sandbox && !config.production && typeof deps.mintDevSessionToken === 'function';
  const simulate = devMode ? deps.simulate : undefined;
  const grantScopes = devMode ? deps.grantScopes : undefined;
  const devShop = deps.devShop ?? DEFAULT_DEV_SHOP;
  const template = fs.readFileSync(path.join(uiDir, 'index.html'), 'utf8');
  if (!template.includes('<!-- app:head -->')) throw new Error('index.html lacks the <!-- app:head --> marker');
  const html = template.replace(
    '<!-- app:head -->',
    headFor({ devMode, apiKey: config.shopify.apiKey, devShop, simulate: Boolean(simulate) }),
  );
  const catalog = JSON.stringify({
    ...buildCatalog(),
    sandbox: devMode
      ? {
          simulate_topics: simulate ? (deps.simulateTopics ?? Object.keys(EVENT_TABLE)) : [],
          links: deps.sandboxLinks ?? [],
          notify_me_preview: deps.notifyMePreview ?? null,
          ...(grantScopes ? { grant_scopes: true } : {}),
        }
      : null,
  });

  const r = Router();
  r.get('/', (req: Request, res: Response) => {
    res.set({
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
      'Content-Security-Policy': frameAncestors(req),
      'Referrer-Policy': 'strict-origin-when-cross-origin',
      'X-Content-Type-Options': 'nosniff',
    });
    res.send(html);
  });
  r.get('/ui/catalog.json', (_req, res) => {
    res.set('Cache-Control', 'no-cache').type('application/json').send(catalog);
  });
  // maxAge 0: revalidated by ETag on every load, so a deploy never mixes two versions' modules
  r.use(
    '/ui',
    express.static(path.join(uiDir, 'public'), {
      index: false,
      maxAge: 0,
      setHeaders: (res) => res.setHeader('X-Content-Type-Options', 'nosniff'),
    }),
  );
  r.use('/ui', (_req, res) => sendError(res, 404, 'not_found', 'No such file'));

  if (devMode) {
    const mint = deps.mintDevSessionToken!;
    const shopParam = (v: unknown) => (typeof v === 'string' && v ? v.trim().toLowerCase() : devShop);
    r.get('/_dev/session-token', (req, res) => {
      const shop = shopParam(req.query.shop);
      if (!SHOP_DOMAIN.test(shop)) return sendError(res, 400, 'invalid_shop', 'shop must be a myshopify.com domain');
      res.set('Cache-Control', 'no-store').json({ token: mint(shop), shop, expires_in: DEV_TOKEN_TTL_SEC });
    });
    if (grantScopes) {
      r.post('/_dev/grant-scopes', express.json({ limit: '10kb' }), async (req, res) => {
        const body = (req.body ?? {}) as { scopes?: unknown; shop?: unknown };
        const shop = shopParam(body.shop);
        const scopes = Array.isArray(body.scopes) ? body.scopes : [];
        if (!SHOP_DOMAIN.test(shop)) return sendError(res, 400, 'invalid_shop', 'shop must be a myshopify.com domain');
        if (scopes.length === 0 || !scopes.every((s) => typeof s === 'string' && OPTIONAL_SCOPES.includes(s))) {
          return sendError(res, 400, 'invalid_scopes', `scopes must be some of the optional scopes: ${OPTIONAL_SCOPES.join(', ')}`);
        }
        try {
          const result = (await grantScopes(shop, scopes as string[])) as { status?: unknown } | undefined;
          res.json({ granted: scopes, webhook_status: typeof result?.status === 'number' ? result.status : null });
        } catch (err) {
          sendError(res, 502, 'grant_failed', `The simulated shop could not grant the scopes: ${(err as Error).message}`);
        }
      });
    }
    if (simulate) {
      const topics = new Set(deps.simulateTopics ?? Object.keys(EVENT_TABLE));
      r.post('/_dev/simulate', express.json({ limit: '10kb' }), async (req, res) => {
        const body = (req.body ?? {}) as { topic?: unknown; shop?: unknown };
        const shop = shopParam(body.shop);
        if (typeof body.topic !== 'string' || !topics.has(body.topic))
          return sendError(res, 400, 'invalid_topic', `topic must be one of ${[...topics].join(', ')}`);
        if (!SHOP_DOMAIN.test(shop)) return sendError(res, 400, 'invalid_shop', 'shop must be a myshopify.com domain');
        try {
          const result = (await simulate(body.topic, shop)) as { status?: unknown } | undefined;
          // Only the webhook's status goes back: a result object could carry signed headers.
          res.json({ topic: body.topic, webhook_status: typeof result?.status === 'number' ? result.status : null });
        } catch (err) {
          sendError(res, 502, 'simulate_failed', `The simulated shop could not send the webhook: ${(err as Error).message}`);
        }
      });
    }
  }
  return r;
}
