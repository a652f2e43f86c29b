// Encryption of service API keys at rest: AES-256-GCM, a random 96-bit nonce per value, and a
// key id in the envelope so keys can rotate (old keys keep decrypting, new writes use the current).
// Envelope: "v1.<keyId>.<nonce>.<ciphertext>.<tag>" (base64url parts). The shop id is bound as
// associated data, so a ciphertext copied to another shop's row does not decrypt.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export class DecryptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DecryptError';
  }
}

export interface SecretBox {
  encrypt(plain: string, context: string): string;
  decrypt(envelope: string, context: string): string;
  /** True when the value was written with a key other than the current one. */
  needsRotation(envelope: string): boolean;
  readonly currentKeyId: string;
}

export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

export function createSecretBox(current: Buffer, previous: Buffer[] = []): SecretBox {
  if (current.length !== 32) throw new Error('the encryption key must be 32 bytes');
  const keys = new Map<string, Buffer>();
  for (const k of [current, ...previous]) keys.set(keyId(k), k);
  const currentKeyId = keyId(current);

  return {
    currentKeyId,
    encrypt(plain, context) {
      const nonce = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', current, nonce);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return ['v1', currentKeyId, nonce.toString('base64url'), ct.toString('base64url'), cipher.getAuthTag().toString('base64url')].join(
        '.',
      );
    },
    decrypt(envelope, context) {
      const parts = envelope.split('.');
      if (parts.length !== 5 || parts[0] !== 'v1') throw new DecryptError('unrecognised secret envelope');
      const [, kid, nonce, ct, tag] = parts as [string, string, string, string, string];
      const key = keys.get(kid);
      if (!key)
        throw new DecryptError(
          `no encryption key with id ${kid} is configured (was ENCRYPTION_KEY rotated without ENCRYPTION_KEYS_PREVIOUS?)`,
        );
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(nonce, 'base64url'));
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new DecryptError('the stored secret could not be decrypted (wrong key or tampered value)');
      }
    },
    needsRotation(envelope) {
      return envelope.split('.')[1] !== currentKeyId;
    },
  };
}

/** What the merchant may see of a key: its last four characters. */
export function keyHint(apiKey: string): string {
  return `…${apiKey.slice(-4)}`;
}
