// The closed set of outcomes. Every response and every transport error is classified here,
// once; callers (the worker, the connect use case) branch only on `kind`.
import { describeErrorBody, isRecord, parseRetryAfterMs, type HeaderBag } from './parse';
import type { RateInfo, ServiceFailure } from './types';

const MAX_MESSAGE = 500;

/** Removes the key from any text that might echo it (error bodies, transport errors). */
export function redactSecret(text: string, secret: string): string {
  // Very short "keys" are not secrets worth mangling every message for.
  const clean = secret.length >= 4 ? text.split(secret).join('[redacted]') : text;
  return clean.length > MAX_MESSAGE ? `${clean.slice(0, MAX_MESSAGE - 1)}…` : clean;
}

export interface ResponseFacts {
  status: number;
  headers: HeaderBag;
  body: unknown; // parsed JSON or undefined
  text: string;
  rate: RateInfo;
  durationMs: number;
  nowMs?: number;
  /** The setting that names the address asked (SERVICE_BASE_URL, SERVICE_WEBHOOK_URL), for messages. */
  setting?: string;
}

function headerOf(headers: HeaderBag, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Where a redirect points, as its origin only: a path or query may carry anything. */
function redirectTarget(headers: HeaderBag): string {
  const location = headerOf(headers, 'location');
  if (!location) return 'no Location';
  try {
    const url = new URL(location, 'http://relative.invalid');
    return url.origin === 'http://relative.invalid' ? 'a path on the same host' : url.origin;
  } catch {
    return 'an unreadable Location';
  }
}

/** Statuses that say the request should be sent again later, unchanged. */
const RETRY_LATER = new Set([408, 425]);

/** Classifies a non-2xx response. The caller redacts the key from `message`. */
export function failureFromResponse(r: ResponseFacts): ServiceFailure {
  const base = { status: r.status, rate: r.rate, durationMs: r.durationMs, mayHaveArrived: false };
  // The spec gives 403 bodies a `detail` and 400 bodies a `message`; prefer the documented one.
  const said = describeErrorBody(r.body, r.text, r.status === 403 ? 'detail' : 'message');
  const s = r.status;
  const setting = r.setting ?? 'the service address';
  if (s === 429) {
    const retryAfterMs = parseRetryAfterMs(r.headers, r.nowMs);
    const wait = retryAfterMs === undefined ? '' : ` It asks to retry after ${retryAfterMs} ms.`;
    return {
      kind: 'rate_limited',
      ...base,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      message: `The email service rate limit was exceeded (429).${wait}`,
    };
  }
  if (s === 401) {
    return { kind: 'auth', ...base, message: 'The email service refused the API key (401): it is missing, invalid or revoked.' };
  }
  if (s === 403) {
    return { kind: 'blocked', ...base, message: said ?? 'The email service temporarily blocked requests from this key (403).' };
  }
  if (s === 400) {
    return { kind: 'bad_request', ...base, message: said ?? 'The email service rejected the request as invalid (400).' };
  }
  if (s === 406) {
    return {
      kind: 'not_acceptable',
      ...base,
      message:
        'The email service answered 406 Not Acceptable: the request lacked an acceptable Accept header, which is a bug in the connector.',
    };
  }
  if (s === 404 || s === 410) {
    // the endpoints are the spec's: an address that does not have them is a configuration problem
    return {
      kind: 'not_found',
      ...base,
      message: `The email service address answered ${s} Not Found: check ${setting} (the connector's configuration, the same for every shop).`,
    };
  }
  if (s >= 300 && s < 400) {
    // never followed: the API key goes to the configured address only
    return {
      kind: 'retryable',
      ...base,
      message: `The email service address answered with a redirect (${s}) to ${redirectTarget(r.headers)}, which is not followed so the API key is never sent elsewhere: check ${setting}.`,
    };
  }
  if (RETRY_LATER.has(s)) {
    return { kind: 'retryable', ...base, message: `The email service asked to send the request again later (${s}).` };
  }
  if (s >= 500) {
    return { kind: 'retryable', ...base, message: `The email service failed with status ${s}${said ? `: ${said}` : '.'}` };
  }
  // another 4xx (413, 422, 405, ...): this request is refused as it is, and would be again
  return { kind: 'bad_request', ...base, message: `The email service answered with unexpected status ${s}${said ? `: ${said}` : '.'}` };
}

/** Whether the answer carries the rate-limit headers the spec puts on every response of the service. */
export function fromTheService(r: Pick<ResponseFacts, 'rate'>): boolean {
  return r.rate.limit !== undefined || r.rate.remaining !== undefined;
}

/** Whether a body is an HTML page (a proxy's, a login or maintenance page), not an API answer. */
export function isHtml(r: Pick<ResponseFacts, 'headers' | 'text'>): boolean {
  const type = headerOf(r.headers, 'content-type')?.toLowerCase() ?? '';
  return type.includes('text/html') || /^\s*</.test(r.text);
}

/**
 * Classifies a 2xx answer to a request that must be accepted (send-event, contact delete): null
 * when it is an acceptance, else why it is not.
 *
 * - A JSON body saying `success: false` is the service refusing: retryable, and not counted as a
 *   send the service may have (it said it did not take it).
 * - With `json: 'required'` (send-event), a body that is not JSON is no acceptance: an HTML page
 *   or an empty 200 is what a proxy, a captive portal or a wrong host answers, and the event
 *   would be lost if it counted. Only a 204 with the service's rate headers counts without a
 *   body. With `json: 'unless-text'` (contact delete, whose success the spec words as a
 *   sentence), plain text and empty bodies are acceptances; an HTML page never is.
 *
 * `mayHaveArrived` of a 2xx that is not JSON: true only when the answer carries the service's
 * rate headers (the service itself answered oddly, and may have acted). A page from something in
 * front of the service (no such headers) means the request never reached it: such sends are not
 * counted against DEFAULT_MAX_SENDS, which would otherwise kill every message of a proxy
 * outage after 8 tries instead of retrying for the full 24 h.
 */
export function failureFromSuccess(r: ResponseFacts, json: 'required' | 'unless-text'): ServiceFailure | null {
  const base = { kind: 'retryable' as const, status: r.status, rate: r.rate, durationMs: r.durationMs };
  if (isRecord(r.body) && r.body.success === false) {
    const said = describeErrorBody({ ...r.body, success: undefined }, '', 'message');
    return {
      ...base,
      mayHaveArrived: false,
      message: `The email service answered ${r.status} but said success: false${said ? `: ${said}` : ''}; it did not take the request.`,
    };
  }
  if (r.body !== undefined) return null;
  const html = isHtml(r);
  if (!html && json === 'unless-text') return null;
  if (!html && r.status === 204 && fromTheService(r)) return null;
  const what = html ? 'an HTML page' : r.text.trim() === '' ? 'an empty body' : 'a body that is not JSON';
  const setting = r.setting ?? 'the service address';
  return {
    ...base,
    mayHaveArrived: fromTheService(r),
    message: `The email service address answered ${r.status} with ${what}, not the service's JSON: not counted as delivered (a proxy or another server may be answering; check ${setting} if it lasts).`,
  };
}

function errCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; cause?: unknown };
  if (typeof e.code === 'string') return e.code;
  return errCode(e.cause);
}

/**
 * Timeouts, refused or reset connections and the like: all retryable. `written` says whether the
 * request reached a connection; false means the service cannot have it (no connection in time,
 * say), so the send does not count against the message's cap. Left out, it may have.
 */
export function failureFromError(err: unknown, ctx: { timeoutMs: number; durationMs: number; written?: boolean }): ServiceFailure {
  // Duck-typed: DOMException (AbortSignal.timeout) may come from another realm, e.g. under jest.
  const e = (typeof err === 'object' && err !== null ? err : {}) as { name?: unknown; message?: unknown };
  const name = typeof e.name === 'string' ? e.name : '';
  const code = errCode(err);
  let message: string;
  // the request was written (or may have been) before the wait ended: the service may have it
  let mayHaveArrived = true;
  if (
    name === 'TimeoutError' ||
    name === 'AbortError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_ABORTED' ||
    code === 'UND_ERR_CONNECT_TIMEOUT'
  ) {
    message =
      ctx.written === false
        ? `Could not connect to the email service within ${ctx.timeoutMs} ms.`
        : `The email service did not answer within ${ctx.timeoutMs} ms.`;
  } else if (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE') {
    message = 'The connection to the email service was closed before a response arrived.';
  } else if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH') {
    message = `Could not connect to the email service (${code}).`;
    mayHaveArrived = false;
  } else {
    const detail = typeof e.message === 'string' ? e.message : String(err);
    message = `The request to the email service failed: ${detail}${code ? ` (${code})` : ''}.`;
  }
  if (ctx.written === false) mayHaveArrived = false;
  return { kind: 'retryable', message, rate: {}, durationMs: ctx.durationMs, mayHaveArrived };
}
