// The closed set of outcomes. Every response and every transport error is classified here,
// once; callers (the worker, the connect use case) branch only on `kind`.
import { describeErrorBody, parseRetryAfterMs, type HeaderBag } from './parse';
import type { FailureKind, RateInfo, ServiceFailure, ServiceResult } from './types';

export const FAILURE_KINDS = [
  'rate_limited', 'auth', 'blocked', 'bad_request', 'not_acceptable', 'retryable',
] as const satisfies readonly FailureKind[];

export function isFailure<T>(r: ServiceResult<T>): r is ServiceFailure {
  return r.kind !== 'ok';
}

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
}

/** Classifies a non-2xx response. The caller redacts the key from `message`. */
export function failureFromResponse(r: ResponseFacts): ServiceFailure {
  const base = { status: r.status, rate: r.rate, durationMs: r.durationMs, mayHaveArrived: false };
  // The spec gives 403 bodies a `detail` and 400 bodies a `message`; prefer the documented one.
  const said = describeErrorBody(r.body, r.text, r.status === 403 ? 'detail' : 'message');
  const s = r.status;
  if (s === 429) {
    const retryAfterMs = parseRetryAfterMs(r.headers, r.nowMs);
    const wait = retryAfterMs === undefined ? '' : ` It asks to retry after ${retryAfterMs} ms.`;
    return {
      kind: 'rate_limited', ...base, ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
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
      kind: 'not_acceptable', ...base,
      message: 'The email service answered 406 Not Acceptable: the request lacked an acceptable Accept header, which is a bug in the connector.',
    };
  }
  if (s >= 500) {
    return { kind: 'retryable', ...base, message: `The email service failed with status ${s}${said ? `: ${said}` : '.'}` };
  }
  return { kind: 'bad_request', ...base, message: `The email service answered with unexpected status ${s}${said ? `: ${said}` : '.'}` };
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
  if (name === 'TimeoutError' || name === 'AbortError' || code === 'UND_ERR_HEADERS_TIMEOUT'
    || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_ABORTED' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    message = ctx.written === false ? `Could not connect to the email service within ${ctx.timeoutMs} ms.` : `The email service did not answer within ${ctx.timeoutMs} ms.`;
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
