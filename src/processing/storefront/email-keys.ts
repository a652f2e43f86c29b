// Keys that stand for a shopper's email in the storefront's trust state (PixelShopper, and the
// pending identities' PixelClaim),
// so those tables hold no address: HMAC-SHA256 of the shop id and the normalised email, with a key
// derived from ENCRYPTION_KEY (HKDF). Without that secret a database copy cannot be checked
// against a list of candidate addresses; with the shop id in the message, one email has unrelated
// keys in two shops. Rows keyed with an older ENCRYPTION_KEY (ENCRYPTION_KEYS_PREVIOUS) are still
// found by `all`, so an erasure after a key rotation misses none of them.
import { createHmac, hkdfSync } from 'node:crypto';
import { normalizeEmail } from '../../mapping/email';

export interface EmailKeys {
  /** The key rows are written with (the current secret). */
  of(shopId: string, email: string): string;
  /** Every key the email may have been written with (current and previous secrets), for erasure. */
  all(shopId: string, email: string): string[];
}

const INFO = 'connector storefront email key v1';

function derive(secret: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), INFO, 32));
}

export function createEmailKeys(secrets: { key: Buffer; previousKeys?: readonly Buffer[] }): EmailKeys {
  const keys = [secrets.key, ...(secrets.previousKeys ?? [])].map(derive);
  const mac = (key: Buffer, shopId: string, email: string) =>
    createHmac('sha256', key)
      .update(`${shopId}\u0000${normalizeEmail(email)}`)
      .digest('base64url');
  return {
    of: (shopId, email) => mac(keys[0]!, shopId, email),
    all: (shopId, email) => [...new Set(keys.map((k) => mac(k, shopId, email)))],
  };
}
