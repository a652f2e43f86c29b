// The storefront web pixel of each shop, Shopify's side: a WebPixel row holding the
// shop's public pixel key and its state at Shopify. ensureActive creates the key once and keeps it
// across reconnects and reinstalls, then activates the extension with webPixelCreate (or
// webPixelUpdate when the shop already has the app's pixel). States:
//   pending          the row exists, activation not finished
//   active           Shopify runs the pixel with this key
//   missing_scopes   write_pixels / read_customer_events not granted: nothing was asked
//   error            Shopify refused or failed (the row's error says why, in a sentence)
//   removed          deleted (or the app was uninstalled): the storefront endpoint refuses the key
import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/client';
import type { Logger } from '../../observability/logger';
import type { ShopifyApi } from './api';
import { describeShopifyError } from './errors';
import { FEATURE_SCOPES, missingScopes } from './scopes';
import type { OfflineTokens } from './tokens';
import {
  createPixel,
  currentPixel,
  deletePixel,
  isAccessDenied,
  updatePixel,
  type PixelMutationResult,
  type PixelUserError,
} from './web-pixel-api';

export const WEB_PIXEL_STATES = ['pending', 'active', 'missing_scopes', 'error', 'removed'] as const;
export type WebPixelState = (typeof WEB_PIXEL_STATES)[number];

export interface WebPixelView {
  /** 'none' before the first activation attempt. */
  state: WebPixelState | 'none';
  /** The public key the storefront sends; null before the first activation attempt. */
  key: string | null;
  web_pixel_id: string | null;
  /** A sentence for the merchant when state is error or missing_scopes. */
  error: string | null;
  updated_at: string | null;
}

export interface WebPixels {
  /** Creates the key if needed and activates the pixel at Shopify. Never throws for Shopify failures: they become the state. */
  ensureActive(shop: { id: string; domain: string }): Promise<WebPixelView>;
  /** Deletes the pixel at Shopify when possible; the row keeps its key with state removed. */
  remove(shop: { id: string; domain: string }): Promise<void>;
  /** State removed without calling Shopify (app/uninstalled: the token is already revoked). */
  markRemoved(shopId: string): Promise<void>;
  view(shopId: string): Promise<WebPixelView>;
  /** The shop a storefront key belongs to, unless its pixel was removed (for the pixel endpoint). */
  shopForKey(key: string): Promise<string | null>;
}

export interface WebPixelsDeps {
  db: Db;
  shopify: ShopifyApi;
  tokens: Pick<OfflineTokens, 'getOfflineSession'>;
  logger: Logger;
  now?: () => Date;
  /** A new public key: 24 random bytes, base64url. */
  newKey?: () => string;
}

const NONE: WebPixelView = { state: 'none', key: null, web_pixel_id: null, error: null, updated_at: null };

interface Row {
  shopId: string;
  key: string;
  webPixelId: string | null;
  state: string;
  error: string | null;
  updatedAt: Date;
}

function toView(row: Row | null): WebPixelView {
  if (!row) return { ...NONE };
  const state = (WEB_PIXEL_STATES as readonly string[]).includes(row.state) ? (row.state as WebPixelState) : 'error';
  return { state, key: row.key, web_pixel_id: row.webPixelId, error: row.error, updated_at: row.updatedAt.toISOString() };
}

/** Shopify's userErrors as one sentence; their messages name fields, never secrets. */
function refusal(action: string, errors: PixelUserError[]): string {
  const detail = errors.map((e) => `${e.message.slice(0, 200)}${e.code ? ` (${e.code})` : ''}`).join('; ');
  return `Shopify refused to ${action} the storefront pixel: ${detail}`;
}

const hasCode = (r: PixelMutationResult, code: string) => !r.ok && r.userErrors.some((e) => e.code === code);

export function createWebPixels(deps: WebPixelsDeps): WebPixels {
  const { db, shopify, tokens } = deps;
  const logger = deps.logger.child({ component: 'web-pixel' });
  const now = deps.now ?? (() => new Date());
  const newKey = deps.newKey ?? (() => randomBytes(24).toString('base64url'));
  // One activation per shop at a time (the page's retry and an install hook may race).
  const inflight = new Map<string, Promise<WebPixelView>>();

  const save = (shopId: string, data: Partial<Omit<Row, 'shopId' | 'key'>>) =>
    db.webPixel.update({ where: { shopId }, data: { ...data, updatedAt: now() } });

  async function ensureRow(shopId: string): Promise<Row> {
    const existing = await db.webPixel.findUnique({ where: { shopId } });
    if (existing) return existing;
    try {
      return await db.webPixel.create({ data: { shopId, key: newKey(), state: 'pending', updatedAt: now() } });
    } catch (err) {
      // another activation created it first
      if ((err as { code?: unknown })?.code !== 'P2002') throw err;
      return db.webPixel.findUniqueOrThrow({ where: { shopId } });
    }
  }

  async function activate(shop: { id: string; domain: string }): Promise<WebPixelView> {
    const row = await ensureRow(shop.id);
    const session = await tokens.getOfflineSession(shop.domain);
    if (!session) {
      return toView(
        await save(shop.id, {
          state: 'error',
          error: 'The app has no access to the shop right now; open the app from the Shopify admin to renew it, then retry.',
        }),
      );
    }
    const missing = missingScopes(session.scope, FEATURE_SCOPES.storefront_pixel);
    if (missing.length) {
      return toView(
        await save(shop.id, {
          state: 'missing_scopes',
          error: `The shop has not granted ${missing.join(' and ')}; grant access to turn the storefront pixel on.`,
        }),
      );
    }
    try {
      let result: PixelMutationResult | null = null;
      if (row.webPixelId) {
        result = await updatePixel(shopify, session, row.webPixelId, row.key);
        // deleted at Shopify meanwhile (uninstall, merchant): create it again
        if (hasCode(result, 'NOT_FOUND')) result = null;
      }
      if (!result) {
        result = await createPixel(shopify, session, row.key);
        if (hasCode(result, 'TAKEN')) {
          // the shop already has the app's pixel (an earlier install): take it over with our key
          const existing = await currentPixel(shopify, session);
          if (existing) result = await updatePixel(shopify, session, existing.id, row.key);
        }
      }
      if (!result.ok) {
        const error = refusal('activate', result.userErrors);
        logger.warn({ shop: shop.domain, codes: result.userErrors.map((e) => e.code) }, 'web pixel activation refused');
        return toView(await save(shop.id, { state: 'error', error }));
      }
      logger.info({ shop: shop.domain, webPixelId: result.pixel?.id }, 'web pixel active');
      return toView(await save(shop.id, { state: 'active', webPixelId: result.pixel?.id ?? row.webPixelId, error: null }));
    } catch (err) {
      if (isAccessDenied(err)) {
        return toView(
          await save(shop.id, {
            state: 'missing_scopes',
            error: 'Shopify denied access to web pixels; grant the storefront pixel permissions, then retry.',
          }),
        );
      }
      const failure = describeShopifyError(err);
      logger.warn({ shop: shop.domain, failure }, 'web pixel activation failed');
      return toView(
        await save(shop.id, { state: 'error', error: `Shopify could not activate the storefront pixel (${failure}); retry in a moment.` }),
      );
    }
  }

  return {
    ensureActive(shop) {
      const running = inflight.get(shop.id);
      if (running) return running;
      const p = activate(shop).finally(() => inflight.delete(shop.id));
      inflight.set(shop.id, p);
      return p;
    },

    async remove(shop) {
      const row = await db.webPixel.findUnique({ where: { shopId: shop.id } });
      if (!row) return;
      let webPixelId = row.webPixelId;
      let error: string | null = null;
      if (webPixelId) {
        const session = await tokens.getOfflineSession(shop.domain);
        if (!session || missingScopes(session.scope, ['write_pixels']).length) {
          error = 'The pixel could not be deleted at Shopify (no access); it stays inactive here.';
        } else {
          try {
            const result = await deletePixel(shopify, session, webPixelId);
            if (result.ok || hasCode(result, 'NOT_FOUND')) webPixelId = null;
            else error = refusal('delete', result.userErrors);
          } catch (err) {
            error = `The pixel could not be deleted at Shopify (${describeShopifyError(err)}); it stays inactive here.`;
            logger.warn({ shop: shop.domain, failure: describeShopifyError(err) }, 'web pixel delete failed');
          }
        }
      }
      await save(shop.id, { state: 'removed', webPixelId, error });
    },

    async markRemoved(shopId) {
      // an uninstall removes the app's pixel at Shopify too
      await db.webPixel.updateMany({ where: { shopId }, data: { state: 'removed', webPixelId: null, error: null, updatedAt: now() } });
    },

    async view(shopId) {
      return toView(await db.webPixel.findUnique({ where: { shopId } }));
    },

    async shopForKey(key) {
      const row = await db.webPixel.findUnique({ where: { key }, select: { shopId: true, state: true } });
      return row && row.state !== 'removed' ? row.shopId : null;
    },
  };
}
