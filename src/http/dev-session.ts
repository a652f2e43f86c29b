// Sandbox only: App Bridge-shaped session tokens for the simulated shop, so the embedded page
// works in a plain browser during `npm run dev`. Refuses to exist in production.
import { createHmac, randomBytes } from 'node:crypto';

export const DEV_TOKEN_TTL_SEC = 60;

/** A shop's permanent domain, as Shopify sends it in `shop`: `name.myshopify.com`. */
export const SHOP_DOMAIN = /^[a-z0-9][a-z0-9-]{0,60}\.myshopify\.com$/;

const b64url = (s: string) => Buffer.from(s).toString('base64url');

/**
 * A minter for dev session tokens: HS256 with the app secret, aud = the app's API key,
 * dest = https://{shop}, iss = https://{shop}/admin, valid DEV_TOKEN_TTL_SEC seconds.
 * Throws for a production config, so a production composition root cannot build one.
 */
/** The settings a dev session token is minted from (the app's Config has them). */
export interface DevSessionConfig {
  sandbox: boolean;
  production: boolean;
  shopify: { apiKey: string; apiSecret: string };
}

export function createDevSessionMinter(config: DevSessionConfig, ttlSec = DEV_TOKEN_TTL_SEC): (shop: string) => string {
  if (config.production || !config.sandbox) throw new Error('dev session tokens exist only in sandbox mode');
  const { apiKey, apiSecret } = config.shopify;
  return (shop: string) => {
    const domain = shop.trim().toLowerCase();
    if (!SHOP_DOMAIN.test(domain)) throw new Error('not a myshopify.com shop domain');
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: `https://${domain}/admin`,
      dest: `https://${domain}`,
      aud: apiKey,
      sub: '1',
      exp: now + ttlSec,
      nbf: now - 1,
      iat: now,
      jti: randomBytes(16).toString('hex'),
      sid: randomBytes(16).toString('hex'),
    };
    const signingInput = `${b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64url(JSON.stringify(claims))}`;
    return `${signingInput}.${createHmac('sha256', apiSecret).update(signingInput).digest('base64url')}`;
  };
}
