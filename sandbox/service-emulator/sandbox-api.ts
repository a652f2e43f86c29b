// /_sandbox/*: inspection and control over HTTP, for the dev page and out-of-process tests.
// No auth, no rate limit, not recorded in requests().
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EmulatorControl } from './control';
import { FAULT_MODES, type FaultMode, type FaultSpec } from './faults';
import { readBody, sendJson } from './http-util';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function num(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function workspaceView(c: EmulatorControl, id: string): Record<string, unknown> {
  const ws = c.workspaces().find((w) => w.id === id);
  return {
    workspace_id: id,
    workspace_name: ws?.name,
    rate_limit: ws?.rateLimit,
    keys: c.keys(id).map((k) => ({ name: k.name, hint: `…${k.hint}`, revoked: k.revokedAt !== null })),
    event_counts: c.eventCounts(id),
    contact_count: c.contacts(id).length,
    blocked_until: c.blockedUntil(id),
    shops: c.shops(id),
  };
}

export async function handleSandboxRequest(
  c: EmulatorControl,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  query: URLSearchParams,
): Promise<void> {
  const raw = await readBody(req, 1_000_000);
  let body: unknown = {};
  if (raw.text.trim() !== '') {
    try {
      body = JSON.parse(raw.text) as unknown;
    } catch {
      return sendJson(res, 400, { message: 'Body is not valid JSON.' });
    }
  }
  const b = isObject(body) ? body : {};
  const q = (name: string): string | undefined => query.get(name) ?? undefined;
  const parts = path.replace(/\/+$/, '').split('/').slice(2).map(decodeURIComponent); // after "/_sandbox"
  const route = `${req.method ?? 'GET'} /${parts[0] ?? ''}`;

  try {
    switch (route) {
      case 'GET /events':
        return sendJson(res, 200, { events: c.events({ workspaceId: q('workspace_id'), email: q('email'), eventName: q('event_name') }) });
      case 'GET /contacts':
        return sendJson(res, 200, { contacts: c.contacts(q('workspace_id')), deleted_contacts: c.deletedContacts(q('workspace_id')) });
      case 'GET /requests': {
        const ws = q('workspace_id');
        const limit = num(q('limit'));
        let list = c.requests().filter((r) => ws === undefined || r.workspaceId === ws);
        if (limit !== undefined) list = list.slice(-limit);
        return sendJson(res, 200, { requests: list });
      }
      case 'GET /workspaces':
        if (parts[1] && parts[2] === 'event-counts') return sendJson(res, 200, { event_counts: c.eventCounts(parts[1]) });
        if (parts[1]) return sendJson(res, 200, workspaceView(c, parts[1]));
        return sendJson(res, 200, { workspaces: c.workspaces().map((w) => workspaceView(c, w.id)) });
      case 'POST /workspaces': {
        const rateLimit = num(b.rate_limit ?? b.rateLimit);
        const ws = c.createWorkspace({ id: str(b.id ?? b.workspace_id), name: str(b.name), rateLimit });
        return sendJson(res, 201, { workspace_id: ws.id, workspace_name: ws.name, rate_limit: ws.rateLimit, api_key: ws.apiKey });
      }
      case 'PUT /workspaces': {
        const perSecond = num(b.per_second ?? b.limit ?? b.rate_limit);
        if (!parts[1] || parts[2] !== 'rate-limit' || perSecond === undefined) {
          return sendJson(res, 400, { message: 'Use PUT /_sandbox/workspaces/:id/rate-limit with {"per_second": n}.' });
        }
        c.setRateLimit(parts[1], perSecond);
        return sendJson(res, 200, { workspace_id: parts[1], rate_limit: Math.floor(perSecond) });
      }
      case 'POST /keys': {
        const id = str(b.workspace_id);
        if (!id) return sendJson(res, 400, { message: 'workspace_id is required.' });
        return sendJson(res, 201, { workspace_id: id, api_key: c.createKey(id, str(b.name)) });
      }
      case 'DELETE /keys':
        if (!parts[1]) return sendJson(res, 400, { message: 'Use DELETE /_sandbox/keys/:key.' });
        c.revokeKey(parts[1]);
        return sendJson(res, 204, undefined);
      case 'POST /faults': {
        const mode = b.mode as FaultMode;
        if (!FAULT_MODES.includes(mode)) return sendJson(res, 400, { message: `mode must be one of ${FAULT_MODES.join(', ')}.` });
        const spec: FaultSpec = { mode };
        const count = num(b.count);
        const forMs = num(b.for_ms ?? b.forMs);
        const delayMs = num(b.delay_ms ?? b.delayMs);
        if (count !== undefined) spec.count = count;
        if (forMs !== undefined) spec.forMs = forMs;
        if (delayMs !== undefined) spec.delayMs = delayMs;
        if (str(b.path)) spec.path = str(b.path);
        if (str(b.location)) spec.location = str(b.location);
        c.injectFault(spec);
        return sendJson(res, 201, { fault: spec });
      }
      case 'GET /faults':
        return sendJson(res, 200, { faults: c.faults() });
      case 'DELETE /faults':
        c.clearFaults();
        return sendJson(res, 204, undefined);
      case 'POST /reset':
        c.reset({ all: b.all === true });
        return sendJson(res, 204, undefined);
      default:
        return sendJson(res, 404, { message: `No sandbox route ${route}.` });
    }
  } catch (err) {
    // Unknown workspace or key (404), duplicate workspace id (409): the caller's mistake.
    const message = (err as Error).message;
    return sendJson(res, /already exists/.test(message) ? 409 : 404, { message });
  }
}
