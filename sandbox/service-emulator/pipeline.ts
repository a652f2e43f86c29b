// One service request, in the order a DRF-style service checks things:
// fault → route (404) → Accept (406) → key (401) → block (403) → rate limit (429) → method (405)
// → body (413/400) → handler. Every answer carries x-ratelimit-limit / x-ratelimit-remaining.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../src/observability/logger';
import { API_ROUTES, type ApiReply } from './api';
import type { FaultBox } from './faults';
import { acceptsJson, extractKey, isJsonContentType, maskHeaders, readBody, routeKey, sendJson } from './http-util';
import { peekRemaining, takeSlot } from './limits';
import type { Store } from './state';

export const MAX_BODY_BYTES = 1_000_000;

export interface Core {
  store: Store;
  faults: FaultBox;
  defaultRateLimit: number;
  logger?: Logger;
  /** Resolves after ms, or early (with false) when the emulator closes. */
  sleep(ms: number): Promise<boolean>;
}

const FAULT_REPLIES: Record<string, ApiReply> = {
  status500: { status: 500, body: { detail: 'Internal server error (injected).' } },
  status429: { status: 429, body: { detail: 'Request was throttled (injected).' } },
  status403: { status: 403, body: { detail: 'You do not have permission to perform this action (injected).' } },
  status401: { status: 401, body: { detail: 'Invalid API key (injected).' } },
  status400: { status: 400, body: { message: 'Bad request (injected).' } },
  status406: { status: 406, body: { detail: 'Could not satisfy the request Accept header (injected).' } },
  status404: { status: 404, body: { detail: 'Not found.' } },
  status408: { status: 408, body: { detail: 'Request timeout (injected).' } },
  status425: { status: 425, body: { detail: 'Too early (injected).' } },
  status503: { status: 503, body: { detail: 'Service unavailable (injected).' } },
  success_false: { status: 200, body: { success: false, message: 'The event was not accepted (injected).' } },
};

/** Answers of something in front of the service: no JSON, none of the service's headers. */
const FOREIGN_REPLIES: Record<string, { status: number; type?: string; text: string }> = {
  proxy404: {
    status: 404,
    type: 'text/html',
    text: '<html><head><title>404 Not Found</title></head><body><center><h1>404 Not Found</h1></center><hr><center>nginx</center></body></html>',
  },
  html200: {
    status: 200,
    type: 'text/html',
    text: '<!doctype html><html><body><h1>We’ll be back soon</h1><p>Scheduled maintenance (injected).</p></body></html>',
  },
  redirect307: { status: 307, text: '' },
};

export async function handleServiceRequest(core: Core, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const { store, faults } = core;
  const startedAt = Date.now();
  const method = req.method ?? 'GET';
  const raw = await readBody(req, MAX_BODY_BYTES);
  const key = extractKey(req.headers);
  const d = store.resolve(key);
  const limit = d ? d.ws.rateLimit : core.defaultRateLimit;
  let remaining: number | undefined;

  const finish = (status: number, fault?: string): void => {
    store.record({
      method,
      path,
      headers: maskHeaders(req.headers),
      status,
      at: startedAt,
      durationMs: Date.now() - startedAt,
      workspaceId: d?.ws.id ?? null,
      ...(fault ? { fault } : {}),
    });
    core.logger?.debug({ emulator: { method, path, status, workspaceId: d?.ws.id ?? null, fault } }, 'service emulator request');
  };
  const reply = (r: ApiReply, extra: Record<string, string> = {}, fault?: string): void => {
    const left = remaining ?? (d ? peekRemaining(d.window, limit, Date.now()) : limit);
    sendJson(res, r.status, r.body, { 'x-ratelimit-limit': String(limit), 'x-ratelimit-remaining': String(left), ...extra });
    finish(r.status, fault);
  };

  const fault = faults.take(path, startedAt);
  if (fault?.mode === 'drop') {
    req.socket.destroy();
    finish(0, 'drop');
    return;
  }
  if (fault?.mode === 'delay') {
    const completed = await core.sleep(fault.delayMs);
    if (!completed || res.destroyed || req.socket.destroyed) {
      if (!res.destroyed) req.socket.destroy();
      finish(0, 'delay');
      return;
    }
  } else if (fault && FOREIGN_REPLIES[fault.mode]) {
    const f = FOREIGN_REPLIES[fault.mode]!;
    const headers: Record<string, string> = { 'content-length': String(Buffer.byteLength(f.text)) };
    if (f.type) headers['content-type'] = f.type;
    if (fault.mode === 'redirect307') headers.location = fault.location ?? 'http://127.0.0.1:9/moved';
    if (!res.destroyed && !res.writableEnded) res.writeHead(f.status, headers).end(f.text);
    finish(f.status, fault.mode);
    return;
  } else if (fault) {
    const r = FAULT_REPLIES[fault.mode] as ApiReply;
    if (r.status === 429) remaining = 0;
    // an injected 400 is a bad request like any other: it counts towards the team's block
    if (r.status === 400) d?.guard.recordBadRequest(Date.now());
    reply(r, r.status === 429 ? { 'retry-after': '1' } : {}, fault.mode);
    return;
  }

  const now = Date.now();
  const route = API_ROUTES.get(routeKey(path));
  if (!route) return reply({ status: 404, body: { detail: 'Not found.' } });
  if (!acceptsJson(req.headers.accept)) {
    return reply({ status: 406, body: { detail: 'Could not satisfy the request Accept header.' } });
  }
  if (!d) {
    const detail = key ? 'Invalid API key.' : 'Authentication credentials were not provided.';
    return reply({ status: 401, body: { detail } }, { 'www-authenticate': 'Bearer' });
  }
  if (d.guard.isBlocked(now)) {
    const secs = Math.ceil((d.guard.blockedUntil - now) / 1000);
    return reply({
      status: 403,
      body: { detail: `You do not have permission to perform this action. Too many bad requests; try again in ${secs} seconds.` },
    });
  }
  const slot = takeSlot(d.window, limit, now);
  remaining = slot.remaining;
  if (!slot.allowed) {
    const secs = slot.retryAfterSec ?? 1;
    return reply(
      { status: 429, body: { detail: `Request was throttled. Expected available in ${secs} second${secs === 1 ? '' : 's'}.` } },
      { 'retry-after': String(secs) },
    );
  }
  const handler = route[method];
  if (!handler)
    return reply({ status: 405, body: { detail: `Method "${method}" not allowed.` } }, { allow: Object.keys(route).join(', ') });

  let body: unknown;
  if (method === 'POST') {
    if (raw.tooLarge) return reply({ status: 413, body: { message: 'Request body exceeds 1 MB.' } });
    if (!isJsonContentType(req.headers['content-type'])) {
      d.guard.recordBadRequest(now);
      return reply({ status: 400, body: { message: 'Content-Type must be application/json.' } });
    }
    try {
      body = JSON.parse(raw.text) as unknown;
    } catch {
      d.guard.recordBadRequest(now);
      return reply({ status: 400, body: { message: 'Request body is not valid JSON.' } });
    }
  }
  const result = handler({ store, d, body, now });
  if (result.status === 400) d.guard.recordBadRequest(now);
  reply(result);
}
