// The fake shop's web pixel (one per app and shop, as on Shopify): webPixelCreate,
// webPixelUpdate, webPixelDelete and the webPixel query, with Shopify's userErrors (TAKEN,
// NOT_FOUND, BLANK, INVALID_SETTINGS against the extension's settings: one string field,
// pixelKey) and scope checks (write_pixels and read_customer_events; reading needs read_pixels).
import type { GraphqlHandler } from './graphql';
import type { FakeShopState } from './state';
import { accessDenied, grants, type CostBuckets } from './cost';

export interface FakePixel {
  id: string;
  /** The settings JSON string, as the app sent it. */
  settings: string;
}

const MUTATION_COST = 10;
let nextPixelId = 7_700_000;

type UserError = { field: string[]; message: string; code: string };

function checkSettings(raw: unknown): UserError | null {
  if (typeof raw !== 'string' || raw.trim() === '')
    return { field: ['webPixel', 'settings'], message: "Settings can't be blank", code: 'BLANK' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { field: ['webPixel', 'settings'], message: 'Settings is not a valid JSON', code: 'INVALID_CONFIGURATION_JSON' };
  }
  const o = parsed as Record<string, unknown> | null;
  const keys = o && typeof o === 'object' && !Array.isArray(o) ? Object.keys(o) : null;
  const valid =
    keys !== null &&
    keys.length === 1 &&
    keys[0] === 'pixelKey' &&
    typeof o!.pixelKey === 'string' &&
    o!.pixelKey.trim() !== '' &&
    o!.pixelKey.length <= 255;
  return valid
    ? null
    : {
        field: ['webPixel', 'settings'],
        message: 'Settings are invalid against the settings definition of the extension',
        code: 'INVALID_SETTINGS',
      };
}

export function pixelHandler(state: FakeShopState, pixels: Map<string, FakePixel>, costs: CostBuckets): GraphqlHandler {
  return ({ shop, query, variables }) => {
    const op =
      /\b(webPixelCreate|webPixelUpdate|webPixelDelete)\s*\(/.exec(query)?.[1] ?? (/\bwebPixel\s*(\(|\{)/.test(query) ? 'webPixel' : null);
    if (!op) return undefined;
    const scopes = state.scopesOf(shop.domain);
    const current = pixels.get(shop.domain) ?? null;

    if (op === 'webPixel') {
      if (!grants(scopes, 'read_pixels')) return accessDenied('webPixel', 'read_pixels');
      const wanted = typeof variables.id === 'string' ? variables.id : null;
      const found = current && (!wanted || wanted === current.id) ? current : null;
      if (!found)
        return {
          errors: [{ message: 'No web pixel was found for this app', extensions: { code: 'NOT_FOUND' }, path: ['webPixel'] }],
          data: { webPixel: null },
        };
      return costs.charge(shop.domain, 1, () => ({ data: { webPixel: { ...found } } }));
    }

    for (const needed of op === 'webPixelDelete' ? ['write_pixels'] : ['write_pixels', 'read_customer_events']) {
      if (!grants(scopes, needed)) return accessDenied(op, needed);
    }
    const payload = (body: Record<string, unknown>, errors: UserError[] = []) =>
      costs.charge(shop.domain, MUTATION_COST, () => ({ data: { [op]: { userErrors: errors, ...body } } }));
    const input = (variables.webPixel ?? {}) as { settings?: unknown };

    if (op === 'webPixelCreate') {
      if (current) return payload({ webPixel: null }, [{ field: ['webPixel'], message: 'Web pixel is taken.', code: 'TAKEN' }]);
      const invalid = checkSettings(input.settings);
      if (invalid) return payload({ webPixel: null }, [invalid]);
      const created = { id: `gid://shopify/WebPixel/${nextPixelId++}`, settings: input.settings as string };
      pixels.set(shop.domain, created);
      return payload({ webPixel: { ...created } });
    }
    const id = typeof variables.id === 'string' ? variables.id : '';
    if (!current || current.id !== id) {
      return payload(op === 'webPixelDelete' ? { deletedWebPixelId: null } : { webPixel: null }, [
        { field: ['id'], message: 'Web pixel not found', code: 'NOT_FOUND' },
      ]);
    }
    if (op === 'webPixelDelete') {
      pixels.delete(shop.domain);
      return payload({ deletedWebPixelId: id });
    }
    const invalid = checkSettings(input.settings);
    if (invalid) return payload({ webPixel: null }, [invalid]);
    current.settings = input.settings as string;
    return payload({ webPixel: { ...current } });
  };
}

/** currentAppInstallation { accessScopes { handle } }: the scopes the shop granted. */
export function accessScopesHandler(state: FakeShopState, costs: CostBuckets): GraphqlHandler {
  return ({ shop, query }) => {
    if (!/\bcurrentAppInstallation\s*\{/.test(query)) return undefined;
    return costs.charge(shop.domain, 2, () => ({
      data: { currentAppInstallation: { accessScopes: state.scopesOf(shop.domain).map((handle) => ({ handle })) } },
    }));
  };
}
