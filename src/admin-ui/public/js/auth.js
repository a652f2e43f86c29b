// Where session tokens come from. In Shopify admin: App Bridge's shopify.idToken(), a fresh
// token per call. In sandbox (`npm run dev`): the server's /_dev/session-token for the
// simulated shop, cached until shortly before it expires.
import { ApiError } from './api.js';

export function appBridgeTokens() {
  return async () => {
    const bridge = window.shopify;
    if (!bridge || typeof bridge.idToken !== 'function') {
      throw new ApiError(0, 'no_app_bridge', 'Open this app from your Shopify admin to manage it.');
    }
    return bridge.idToken();
  };
}

export function devTokens(shop) {
  let cached = null;
  let pending = null;

  async function fetchToken() {
    let res;
    try {
      res = await fetch(`/_dev/session-token?shop=${encodeURIComponent(shop)}`, { cache: 'no-store' });
    } catch {
      throw new ApiError(0, 'network_error', 'The app could not be reached. Is `npm run dev` still running?');
    }
    if (!res.ok)
      throw new ApiError(res.status, 'dev_token_unavailable', 'The sandbox could not provide a session token for the simulated shop.');
    const data = await res.json();
    cached = { token: data.token, until: Date.now() + Math.max(5, (data.expires_in ?? 60) - 15) * 1000 };
    return data.token;
  }

  return async ({ fresh = false } = {}) => {
    if (!fresh && cached && cached.until > Date.now()) return cached.token;
    // concurrent callers share one request
    pending ??= fetchToken().finally(() => {
      pending = null;
    });
    return pending;
  };
}
