// The page's only door to the server: every /api call carries a fresh session token, and every
// failure becomes an ApiError with the contract's code and a sentence for the merchant.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

const FALLBACK = {
  0: 'The app could not be reached. Check your connection and try again.',
  401: 'Your session has expired. Reload the page.',
  404: 'That item no longer exists.',
  502: 'The email service could not be reached. Nothing was changed; try again in a moment.',
};

function fallbackMessage(status) {
  return FALLBACK[status] ?? (status >= 500 ? 'Something went wrong on our side. Please try again.' : 'The request was refused.');
}

/**
 * @param {(opts?: {fresh?: boolean}) => Promise<string>} getToken
 */
export function createApi(getToken) {
  async function request(method, path, body) {
    for (let attempt = 0; ; attempt++) {
      const token = await getToken({ fresh: attempt > 0 });
      const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
      if (body !== undefined) headers['content-type'] = 'application/json';
      let res;
      try {
        res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
      } catch {
        throw new ApiError(0, 'network_error', fallbackMessage(0));
      }
      // Shopify's convention: this header means "get a new session token and try again".
      if (res.status === 401 && attempt === 0 && res.headers.get('X-Shopify-Retry-Invalid-Session-Request') === '1') continue;
      if (res.status === 204) return null;
      const data = await res.json().catch(() => null);
      if (!res.ok) {
        const err = data && typeof data === 'object' ? data.error : null;
        throw new ApiError(res.status, err?.code ?? `http_${res.status}`, err?.message || fallbackMessage(res.status));
      }
      return data;
    }
  }

  const q = (params) => {
    const s = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ''));
    return s.toString() ? `?${s}` : '';
  };

  return {
    connection: () => request('GET', '/api/connection'),
    connect: (apiKey) => request('PUT', '/api/connection', { api_key: apiKey }),
    disconnect: () => request('DELETE', '/api/connection'),
    lists: () => request('GET', '/api/lists'),
    customFields: () => request('GET', '/api/custom-fields'),
    settings: () => request('GET', '/api/settings'),
    updateSettings: (patch) => request('PUT', '/api/settings', patch),
    deliveries: ({ status, cursor, limit = 10 } = {}) => request('GET', `/api/deliveries${q({ status, cursor, limit })}`),
    delivery: (id) => request('GET', `/api/deliveries/${encodeURIComponent(id)}`),
    retry: (id) => request('POST', `/api/deliveries/${encodeURIComponent(id)}/retry`),
    testEvent: (email) => request('POST', '/api/test-event', email ? { email } : {}),
    stats: () => request('GET', '/api/stats'),
    budget: () => request('GET', '/api/budget'),
    productAlerts: () => request('GET', '/api/product-alerts'),
    backfill: () => request('GET', '/api/backfill'),
    startBackfill: (body) => request('POST', '/api/backfill', body),
    cancelBackfill: () => request('DELETE', '/api/backfill'),
    permissions: ({ refresh = false } = {}) => request('GET', `/api/permissions${refresh ? '?refresh=1' : ''}`),
    pixel: () => request('GET', '/api/pixel'),
    activatePixel: () => request('POST', '/api/pixel/activate'),
  };
}

const FINAL = new Set(['delivered', 'dead', 'held', 'cancelled']);

/**
 * Polls one delivery until it reaches a final state (or `timeoutMs`), calling onUpdate with
 * each new view. Resolves with the last view seen.
 */
export async function watchDelivery(api, id, { onUpdate, timeoutMs = 120_000, everyMs = 1000 } = {}) {
  const end = Date.now() + timeoutMs;
  let last = null;
  for (;;) {
    try {
      last = await api.delivery(id);
      onUpdate?.(last);
      if (FINAL.has(last.status)) return last;
    } catch (err) {
      if (!(err instanceof ApiError) || err.status === 404 || err.status === 401) throw err;
    }
    if (Date.now() > end) return last;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
