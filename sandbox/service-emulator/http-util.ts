// Small node:http helpers for the emulator. Deliberately independent of src/integrations/service/.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';

export interface BodyRead {
  text: string;
  tooLarge: boolean;
}

/** Reads the whole body; beyond `limit` bytes it keeps draining but drops the data. */
export function readBody(req: IncomingMessage, limit: number): Promise<BodyRead> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= limit) chunks.push(c);
    });
    req.on('end', () => resolve({ text: Buffer.concat(chunks).toString('utf8'), tooLarge: size > limit }));
    req.on('error', () => resolve({ text: '', tooLarge: false }));
    req.on('aborted', () => resolve({ text: '', tooLarge: false }));
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.destroyed || res.writableEnded) return;
  const payload = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    'content-length': String(Buffer.byteLength(payload)),
  });
  res.end(payload);
}

/**
 * Accept must name JSON: application/json, application/* or a bare * / *, with q > 0.
 * A missing or empty Accept header, or one naming only other types, is refused with 406.
 */
export function acceptsJson(accept: string | undefined): boolean {
  if (!accept) return false;
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    if (range === 'application/json' || range === 'application/*' || range === '*/*') return true;
  }
  return false;
}

export function isJsonContentType(ct: string | undefined): boolean {
  return (ct ?? '').split(';')[0]?.trim().toLowerCase() === 'application/json';
}

const KEY_HEADERS = ['x-service-api-key', 'x-service_api_key'];

/** The API key from X-SERVICE-API-KEY, its underscore variant, or Authorization: Bearer. */
export function extractKey(headers: IncomingHttpHeaders): string | undefined {
  for (const name of KEY_HEADERS) {
    const v = headers[name];
    const s = (Array.isArray(v) ? v[0] : v)?.trim();
    if (s) return s;
  }
  const auth = headers.authorization?.trim();
  const m = auth ? /^bearer\s+(\S+)$/i.exec(auth) : null;
  return m?.[1];
}

/** Headers as recorded for inspection: auth values masked, names kept so tests can see the form used. */
export function maskHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const v = Array.isArray(value) ? value.join(', ') : value;
    if (KEY_HEADERS.includes(name)) out[name] = '[masked]';
    else if (name === 'authorization') out[name] = /^bearer\s/i.test(v) ? 'Bearer [masked]' : '[masked]';
    else out[name] = v;
  }
  return out;
}

/** Strips the query and trailing slashes, so /webhook/lists and /webhook/lists/ match. */
export function routeKey(path: string): string {
  const p = path.replace(/\/+$/, '');
  return p === '' ? '/' : p;
}
