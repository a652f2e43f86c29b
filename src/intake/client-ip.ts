// The client address a storefront request's per-IP limit keys on. The socket's peer, unless the
// app runs behind `hops` trusted proxies (TRUST_PROXY): then the address the outermost trusted
// proxy saw, read from the right of X-Forwarded-For, which each proxy appends to. Entries left of
// it are the client's to write and are never used. An IPv6 client keys on its /64, the block one
// subscriber gets (its addresses within are the sender's to pick); an IPv4-mapped one on its IPv4.
import { isIP } from 'node:net';

/** The client's address: `hops` 0 is the socket's peer; n, the n-th address from the right of the chain. */
export function clientAddress(socket: string | undefined, forwardedFor: string | string[] | undefined, hops: number): string {
  const peer = socket ?? '';
  if (hops <= 0 || forwardedFor === undefined) return peer;
  const chain = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  // [client?, ..., proxy n's peer, ..., proxy 1's peer] + the socket (the nearest proxy)
  const all = [...chain, peer];
  const at = all.length - 1 - hops;
  return at >= 0 ? all[at]! : all[0]!;
}

function expandV6(addr: string): string[] | null {
  const [head, tail, ...rest] = addr.split('::');
  if (rest.length) return null;
  const parts = (s: string | undefined) => (s ? s.split(':') : []);
  const h = parts(head);
  const t = parts(tail);
  if (tail === undefined) return h.length === 8 ? h : null;
  const fill = 8 - h.length - t.length;
  return fill < 0 ? null : [...h, ...Array<string>(fill).fill('0'), ...t];
}

/** The key of an address for the per-IP limit (IPv6 by /64); the raw text when it is not an address. */
export function ipKey(address: string): string {
  const a = address
    .replace(/^\[|\]$/g, '')
    .replace(/%.*$/, '')
    .toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return mapped[1]!;
  if (isIP(a) !== 6) return a;
  const groups = expandV6(a.includes('.') ? a.replace(/:(\d+\.\d+\.\d+\.\d+)$/, ':0:0') : a);
  return groups
    ? `${groups
        .slice(0, 4)
        .map((g) => g.replace(/^0+(?=.)/, ''))
        .join(':')}::/64`
    : a;
}
