import { randomBytes } from 'node:crypto';
import { createSecretBox, DecryptError, keyHint } from '../../src/crypto/secret-box';

const k1 = randomBytes(32);
const k2 = randomBytes(32);

describe('secret box', () => {
  it('round-trips a key and never contains the plain text', () => {
    const box = createSecretBox(k1);
    const env = box.encrypt('sk_live_supersecret_1234', 'shop-1');
    expect(env).not.toContain('supersecret');
    expect(env.startsWith(`v1.${box.currentKeyId}.`)).toBe(true);
    expect(box.decrypt(env, 'shop-1')).toBe('sk_live_supersecret_1234');
  });

  it('uses a fresh nonce each time', () => {
    const box = createSecretBox(k1);
    expect(box.encrypt('same', 'c')).not.toBe(box.encrypt('same', 'c'));
  });

  it('refuses a value bound to another shop', () => {
    const box = createSecretBox(k1);
    expect(() => box.decrypt(box.encrypt('x', 'shop-1'), 'shop-2')).toThrow(DecryptError);
  });

  it('refuses a tampered value', () => {
    const box = createSecretBox(k1);
    const parts = box.encrypt('secret', 'c').split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    expect(() => box.decrypt(parts.join('.'), 'c')).toThrow(/could not be decrypted/);
  });

  it('decrypts values written with a previous key after rotation, and says they need re-encryption', () => {
    const old = createSecretBox(k1).encrypt('rotating', 'c');
    const rotated = createSecretBox(k2, [k1]);
    expect(rotated.decrypt(old, 'c')).toBe('rotating');
    expect(rotated.needsRotation(old)).toBe(true);
    expect(rotated.needsRotation(rotated.encrypt('rotating', 'c'))).toBe(false);
  });

  it('names a missing key id without revealing anything secret', () => {
    const old = createSecretBox(k1).encrypt('rotating', 'c');
    expect(() => createSecretBox(k2).decrypt(old, 'c')).toThrow(/no encryption key with id/);
  });

  it('hints only the last four characters', () => {
    expect(keyHint('abcdefgh1234')).toBe('…1234');
  });
});
