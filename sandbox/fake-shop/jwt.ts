// HS256 JWTs with node:crypto, enough for App Bridge session tokens (no dependency).
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface SessionTokenClaims {
  iss: string;
  dest: string;
  aud: string;
  sub: string;
  exp: number;
  nbf: number;
  iat: number;
  jti: string;
  sid: string;
  [claim: string]: unknown;
}

const b64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

export function signHs256(claims: Record<string, unknown>, secret: string): string {
  const head = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const body = b64url(JSON.stringify(claims));
  const sig = createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url');
  return `${head}.${body}.${sig}`;
}

/** The claims when the signature is right and the token is within exp/nbf (10 s leeway); else null. */
export function verifyHs256(token: string, secret: string, leewaySec = 10): Record<string, unknown> | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [head, body, sig] = parts as [string, string, string];
  const expected = createHmac('sha256', secret).update(`${head}.${body}`).digest();
  const given = Buffer.from(sig, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8')) as { alg?: string };
    if (header.alg !== 'HS256') return null;
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
    const now = Math.floor(Date.now() / 1000);
    if (typeof claims.exp === 'number' && claims.exp + leewaySec < now) return null;
    if (typeof claims.nbf === 'number' && claims.nbf - leewaySec > now) return null;
    return claims;
  } catch {
    return null;
  }
}
