// The web pixel's Admin GraphQL operations: webPixelCreate / webPixelUpdate / webPixelDelete and
// the webPixel query. Settings travel as a JSON string validated by Shopify against the
// extension's [settings] (extensions/email-pixel: one field, pixelKey).
import type { Session } from '@shopify/shopify-api';
import type { ShopifyApi } from './api';
import { adminRequest, graphqlErrorCodes } from './admin-graphql';

export interface PixelUserError {
  code: string | null;
  field: string[] | null;
  message: string;
}

export interface RemotePixel {
  id: string;
  settings: string;
}

export type PixelMutationResult = { ok: true; pixel: RemotePixel | null } | { ok: false; userErrors: PixelUserError[] };

const USER_ERRORS = 'userErrors { code field message }';
export const WEB_PIXEL_CREATE = `#graphql
  mutation WebPixelCreate($webPixel: WebPixelInput!) {
    webPixelCreate(webPixel: $webPixel) { ${USER_ERRORS} webPixel { id settings } }
  }`;
export const WEB_PIXEL_UPDATE = `#graphql
  mutation WebPixelUpdate($id: ID!, $webPixel: WebPixelInput!) {
    webPixelUpdate(id: $id, webPixel: $webPixel) { ${USER_ERRORS} webPixel { id settings } }
  }`;
export const WEB_PIXEL_DELETE = `#graphql
  mutation WebPixelDelete($id: ID!) {
    webPixelDelete(id: $id) { ${USER_ERRORS} deletedWebPixelId }
  }`;
export const WEB_PIXEL_QUERY = `#graphql
  query AppWebPixel { webPixel { id settings } }`;

/** The settings string for a key: `{"pixelKey":"…"}`. */
export const pixelSettings = (key: string) => JSON.stringify({ pixelKey: key });

interface Payload {
  userErrors?: Array<{ code?: unknown; field?: unknown; message?: unknown }> | null;
  webPixel?: { id?: unknown; settings?: unknown } | null;
  deletedWebPixelId?: unknown;
}

function toPixel(p: Payload['webPixel']): RemotePixel | null {
  if (!p || typeof p.id !== 'string') return null;
  return { id: p.id, settings: typeof p.settings === 'string' ? p.settings : JSON.stringify(p.settings ?? {}) };
}

function result(payload: Payload | null | undefined): PixelMutationResult {
  const errors = (payload?.userErrors ?? []).map((e) => ({
    code: typeof e.code === 'string' ? e.code : null,
    field: Array.isArray(e.field) ? e.field.map(String) : null,
    message: typeof e.message === 'string' ? e.message : 'unknown error',
  }));
  return errors.length ? { ok: false, userErrors: errors } : { ok: true, pixel: toPixel(payload?.webPixel) };
}

const TIMEOUT_MS = 15_000;

async function run<T>(shopify: ShopifyApi, session: Session, query: string, variables?: Record<string, unknown>): Promise<T> {
  // Not on a delivery's path: waiting out a THROTTLED answer is fine, within a bound.
  const signal = AbortSignal.timeout(TIMEOUT_MS);
  const res = await adminRequest<T>(shopify, session, query, { variables, signal, deadline: Date.now() + TIMEOUT_MS });
  return res.data;
}

export async function createPixel(shopify: ShopifyApi, session: Session, key: string): Promise<PixelMutationResult> {
  const data = await run<{ webPixelCreate?: Payload }>(shopify, session, WEB_PIXEL_CREATE, { webPixel: { settings: pixelSettings(key) } });
  return result(data?.webPixelCreate);
}

export async function updatePixel(shopify: ShopifyApi, session: Session, id: string, key: string): Promise<PixelMutationResult> {
  const data = await run<{ webPixelUpdate?: Payload }>(shopify, session, WEB_PIXEL_UPDATE, {
    id,
    webPixel: { settings: pixelSettings(key) },
  });
  return result(data?.webPixelUpdate);
}

export async function deletePixel(shopify: ShopifyApi, session: Session, id: string): Promise<PixelMutationResult> {
  const data = await run<{ webPixelDelete?: Payload }>(shopify, session, WEB_PIXEL_DELETE, { id });
  return result(data?.webPixelDelete);
}

/** The app's web pixel on the shop, or null when it has none. */
export async function currentPixel(shopify: ShopifyApi, session: Session): Promise<RemotePixel | null> {
  try {
    const data = await run<{ webPixel?: Payload['webPixel'] }>(shopify, session, WEB_PIXEL_QUERY);
    return toPixel(data?.webPixel);
  } catch (err) {
    // Shopify answers "no web pixel" with a NOT_FOUND error rather than null
    if (graphqlErrorCodes(err).includes('NOT_FOUND')) return null;
    throw err;
  }
}

/** Access denied for the operation: the shop has not granted (or has revoked) a needed scope. */
export const isAccessDenied = (err: unknown) => graphqlErrorCodes(err).includes('ACCESS_DENIED');
