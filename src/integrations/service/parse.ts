// Tolerant readers for what the service sends back. The spec leaves most response bodies
// "not shown", so nothing here throws: unknown shapes become nulls and the raw item is kept.
import type { RateInfo, ServiceCustomField, ServiceList } from './types';

export type HeaderBag = Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function leadingInt(value: string | undefined): number | undefined {
  // Accepts "10" and structured forms such as "10, 10;w=1" by reading the first number.
  const m = value === undefined ? null : /^\s*(\d+)/.exec(value);
  return m ? Number(m[1]) : undefined;
}

export function parseRateInfo(headers: HeaderBag): RateInfo {
  const rate: RateInfo = {};
  const limit = leadingInt(header(headers, 'x-ratelimit-limit'));
  const remaining = leadingInt(header(headers, 'x-ratelimit-remaining'));
  if (limit !== undefined) rate.limit = limit;
  if (remaining !== undefined) rate.remaining = remaining;
  return rate;
}

const NUMBER = /^\s*\d+(\.\d+)?\s*$/;

/** A reset value: epoch milliseconds, epoch seconds, or seconds from now, told apart by size. */
function resetToMs(value: string, nowMs: number): number | undefined {
  if (!NUMBER.test(value)) return undefined;
  const n = Number(value);
  if (n > 1e12) return Math.max(0, n - nowMs);
  if (n > 1e9) return Math.max(0, n * 1000 - nowMs);
  return Math.ceil(n * 1000);
}

/**
 * How long a 429 asks us to wait: Retry-After (delta seconds or HTTP-date), then
 * retry-after-ms, then the x-ratelimit-reset family. Undefined when the service said nothing.
 */
export function parseRetryAfterMs(headers: HeaderBag, nowMs: number = Date.now()): number | undefined {
  const retryAfter = header(headers, 'retry-after')?.trim();
  if (retryAfter) {
    if (NUMBER.test(retryAfter)) return Math.ceil(Number(retryAfter) * 1000);
    const at = Date.parse(retryAfter);
    if (!Number.isNaN(at)) return Math.max(0, at - nowMs);
  }
  const ms = header(headers, 'retry-after-ms');
  if (ms && NUMBER.test(ms)) return Math.ceil(Number(ms));
  for (const name of ['x-ratelimit-reset', 'ratelimit-reset', 'x-rate-limit-reset']) {
    const v = header(headers, name);
    const parsed = v === undefined ? undefined : resetToMs(v, nowMs);
    if (parsed !== undefined) return parsed;
  }
  return undefined;
}

/** JSON when the text is JSON, otherwise undefined (empty and plain-text bodies are normal). */
export function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const WRAPPERS = ['data', 'results', 'lists', 'custom_fields', 'customfields', 'fields', 'items'];

/** A bare array, or the first array found under a known wrapper key (one level of nesting too). */
export function extractArray(body: unknown): unknown[] | undefined {
  if (Array.isArray(body)) return body;
  if (!isRecord(body)) return undefined;
  for (const k of WRAPPERS) {
    const v = body[k];
    if (Array.isArray(v)) return v;
  }
  for (const k of WRAPPERS) {
    const v = body[k];
    if (isRecord(v)) {
      const inner = extractArray(v);
      if (inner) return inner;
    }
  }
  return undefined;
}

function pick(item: unknown, keys: readonly string[]): string | null {
  if (!isRecord(item)) return null;
  for (const k of keys) {
    const v = item[k];
    if (typeof v === 'string' && v !== '') return v;
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  }
  return null;
}

export function normaliseList(item: unknown): ServiceList {
  return {
    id: pick(item, ['id', 'list_id', 'listId', 'uuid', 'pk']),
    name: pick(item, ['name', 'list_name', 'listName', 'title', 'label']),
    raw: item,
  };
}

export function normaliseCustomField(item: unknown): ServiceCustomField {
  if (typeof item === 'string') return { key: item, label: item, type: null, raw: item };
  return {
    key: pick(item, ['key', 'field_key', 'fieldKey', 'slug', 'name', 'id']),
    label: pick(item, ['label', 'display_name', 'displayName', 'title', 'name', 'key']),
    type: pick(item, ['type', 'field_type', 'fieldType', 'data_type', 'dataType']),
    raw: item,
  };
}

/** The human part of an error body: message, detail or error, or a DRF-style field map. */
export function describeErrorBody(body: unknown, text: string, prefer: 'message' | 'detail' = 'message'): string | undefined {
  if (isRecord(body)) {
    const order = prefer === 'detail' ? ['detail', 'message'] : ['message', 'detail'];
    for (const k of [...order, 'error', 'error_description']) {
      const v = body[k];
      if (typeof v === 'string' && v.trim() !== '') return v.trim();
      if (isRecord(v) && typeof v.message === 'string') return v.message.trim();
    }
    const parts: string[] = [];
    for (const [k, v] of Object.entries(body)) {
      const texts = (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
      if (texts.length > 0) parts.push(`${k}: ${texts.join(' ')}`);
    }
    if (parts.length > 0) return parts.join('; ');
    return undefined;
  }
  if (typeof body === 'string' && body.trim() !== '') return body.trim();
  // Plain text, but not an HTML error page.
  const t = text.trim();
  if (t !== '' && body === undefined && !t.startsWith('<')) return t;
  return undefined;
}
