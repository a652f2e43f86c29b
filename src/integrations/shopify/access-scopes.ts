// The scopes a shop has granted the app right now, from the Admin API (the stored session's
// `scope` is what the last token or app/scopes_update webhook said).
import type { Session } from '@shopify/shopify-api';
import type { ShopifyApi } from './api';
import { adminRequest } from './admin-graphql';

export const ACCESS_SCOPES_QUERY = `#graphql
  query GrantedScopes { currentAppInstallation { accessScopes { handle } } }`;

interface Data {
  currentAppInstallation?: { accessScopes?: Array<{ handle?: unknown }> | null } | null;
}

/** Throws the library's errors (classify them with classifyShopifyError). */
export async function fetchGrantedScopes(shopify: ShopifyApi, session: Session, timeoutMs = 10_000): Promise<string[]> {
  const res = await adminRequest<Data>(shopify, session, ACCESS_SCOPES_QUERY, {
    signal: AbortSignal.timeout(timeoutMs),
    deadline: Date.now() + timeoutMs,
  });
  const scopes = res.data?.currentAppInstallation?.accessScopes;
  if (!Array.isArray(scopes)) throw new Error('the Admin API answered without the installation access scopes');
  return scopes.map((s) => s.handle).filter((h): h is string => typeof h === 'string');
}
