// Tolerant readers over untrusted payloads: every accessor returns a typed value or null.
export type Obj = Record<string, unknown>;

export function obj(v: unknown): Obj | null {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : null;
}

export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

export function objs(v: unknown): Obj[] {
  return arr(v)
    .map(obj)
    .filter((o): o is Obj => o !== null);
}

// A lone UTF-16 surrogate: JSON allows "\ud800", but Prisma's engine refuses to store it.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * A non-empty string (trimmed), else null. What it returns can be stored in any column: NUL
 * (refused by PostgreSQL text) is dropped and lone surrogates become U+FFFD, so a payload
 * with them is stored instead of failing with a 500 that Shopify would retry for days.
 */
export function str(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const t = v.replaceAll('\u0000', '').replace(LONE_SURROGATE, '\ufffd').trim();
  return t === '' ? null : t;
}

/** Longest value taken as an id or a token: they are stored in indexed columns. */
export const MAX_KEY_LENGTH = 255;

/** An identifier (a token, a handle) kept in an indexed column: a non-empty string of sane length, else null. */
export function key(v: unknown): string | null {
  const s = str(v);
  return s !== null && s.length <= MAX_KEY_LENGTH ? s : null;
}

/** An id as its exact decimal string: parseWebhookBody already turned unsafe integers into strings. */
export function id(v: unknown): string | null {
  if (typeof v === 'number' && Number.isInteger(v)) return String(v);
  if (typeof v === 'bigint') return v.toString();
  return key(v);
}

const GID = /^gid:\/\/shopify\/[A-Za-z]+\/(\d+)(?:\?.*)?$/;

/**
 * An object's id as its exact decimal string: the number in its admin_graphql_api_id when
 * there is one (some payloads carry an `id` already rounded past 2^53 beside the exact gid),
 * else its `id`.
 */
export function objectId(o: Obj | null | undefined): string | null {
  if (!o) return null;
  const gid = typeof o.admin_graphql_api_id === 'string' ? GID.exec(o.admin_graphql_api_id) : null;
  return gid ? gid[1]! : id(o.id);
}

/** Money: Shopify sends decimal strings ("19.99") and sometimes numbers. */
export function money(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  const s = str(v);
  if (s === null || !/^-?\d+(\.\d+)?$/.test(s)) return null;
  return Number(s);
}

export function int(v: unknown): number | null {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  const s = str(v);
  return s !== null && /^-?\d+$/.test(s) && Number.isSafeInteger(Number(s)) ? Number(s) : null;
}

/** Sums money amounts in micro-units so 0.1 + 0.2 is 0.3, not 0.30000000000000004. */
export function sumMoney(values: number[]): number {
  const micros = values.reduce((acc, v) => acc + Math.round(v * 1e6), 0);
  return micros / 1e6;
}

/** An ISO 8601 timestamp in UTC, or null when absent or unreadable. */
export function iso(v: unknown): string | null {
  const s = str(v);
  if (s === null) return null;
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : new Date(t).toISOString();
}

export function firstIso(...values: unknown[]): string | null {
  for (const v of values) {
    const t = iso(v);
    if (t !== null) return t;
  }
  return null;
}
