// The only module that speaks HTTP to the email service (see ../../shared/spec/service-api.md).
// One method per endpoint; every answer is classified once into ServiceResult (errors.ts).
import { performance } from 'node:perf_hooks';
import { Agent, request, type Dispatcher } from 'undici';
import type { Logger } from '../../observability/logger';
import { failureFromError, failureFromResponse, failureFromSuccess, redactSecret } from './errors';
import { extractArray, isRecord, normaliseCustomField, normaliseList, parseJson, parseRateInfo, type HeaderBag } from './parse';
import type {
  RateInfo,
  SendOptions,
  ServiceClient,
  ServiceCustomField,
  ServiceFailure,
  ServiceList,
  ServiceResult,
  Workspace,
} from './types';

export interface ServiceClientOptions {
  baseUrl: string;
  webhookUrl: string;
  timeoutMs: number;
  logger: Logger;
}

type Auth = 'bearer' | 'header';

interface Call {
  endpoint: string;
  method: 'GET' | 'POST';
  /** Preferred path first; the next one is tried once if the service answers 404. */
  paths: readonly string[];
  origin: string;
  /** The setting that names `origin`, for messages about a wrong address. */
  setting: 'SERVICE_BASE_URL' | 'SERVICE_WEBHOOK_URL';
  auth: Auth;
  body?: unknown;
  /** Told the moment the request is written to its connection. */
  onSent?: SendOptions['onSent'];
}

interface Answer {
  kind: 'answer';
  status: number;
  headers: HeaderBag;
  text: string;
  body: unknown;
  rate: RateInfo;
  durationMs: number;
}

const MAX_BODY_BYTES = 2_000_000;
/** Visible ASCII only: what an API key can be and a header can carry. */
const USABLE_KEY = /^[\x21-\x7e]+$/;

const PATHS = {
  validate: ['/webhook/api_key/validate'],
  // Endpoints 2 and 4 are given with and without the /api prefix; the table's form comes first.
  check: ['/webhook/api_key/validate/', '/api/webhook/api_key/validate/'],
  lists: ['/webhook/lists/', '/api/webhook/lists/'],
  customFields: ['/api/webhook/customfields/'],
  deleteContact: ['/api/webhook/contact/delete/'],
  send: ['/webhook/send/'],
} as const;

/**
 * An undici handler that passes everything through to the request's own handler and reports
 * when the request is written: undici calls onConnect synchronously just before it writes the
 * request to a connection, which can be well after request() when a connection has to be opened
 * first and the event loop is busy. The pacer spaces the next send from that moment.
 */
class SentReporter implements Dispatcher.DispatchHandler {
  constructor(
    private readonly inner: Dispatcher.DispatchHandler,
    private readonly onSent: (at: number) => void,
  ) {}
  onConnect(abort: (err?: Error) => void, ...rest: unknown[]): void {
    this.onSent(Date.now());
    // undici passes a context after abort, which its own handler keeps: handed on as given
    (this.inner.onConnect as ((abort: (err?: Error) => void, ...rest: unknown[]) => void) | undefined)?.call(this.inner, abort, ...rest);
  }
  onError(err: Error): void {
    this.inner.onError?.(err);
  }
  onUpgrade(statusCode: number, headers: Buffer[] | string[] | null, socket: import('node:stream').Duplex): void {
    this.inner.onUpgrade?.(statusCode, headers, socket);
  }
  onResponseStarted(): void {
    this.inner.onResponseStarted?.();
  }
  onHeaders(statusCode: number, headers: Buffer[], resume: () => void, statusText: string): boolean {
    return this.inner.onHeaders?.(statusCode, headers, resume, statusText) ?? true;
  }
  onData(chunk: Buffer): boolean {
    return this.inner.onData?.(chunk) ?? true;
  }
  onComplete(trailers: string[] | null): void {
    this.inner.onComplete?.(trailers);
  }
  onBodySent(chunkSize: number, totalBytesSent: number): void {
    this.inner.onBodySent?.(chunkSize, totalBytesSent);
  }
}

/** The agent, with requests that carry `onSent` reporting the moment they are written (all of the client's). */
function reportingSends(agent: Agent): Dispatcher {
  const dispatch = (options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean => {
    const onSent = (options as { onSent?: (at: number) => void }).onSent;
    return agent.dispatch(options, onSent ? new SentReporter(handler, onSent) : handler);
  };
  return new Proxy(agent, { get: (target, key) => (key === 'dispatch' ? dispatch : Reflect.get(target, key)) });
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      body.destroy();
      break;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A request's deadline, `ms` after it starts, that reads the sockets before it gives up. A timer
 * runs before the event loop reads its sockets, so when the loop is held (a long synchronous
 * task, the process not scheduled on a busy machine) past the deadline, a plain timer would
 * throw away unread an answer that arrived in time, and the event, accepted by the service,
 * would be sent again. Here the abort waits two turns of the loop after the timer, so an answer
 * already in a socket is read first; an answer not there yet still times out about `ms` after
 * the start.
 */
function answerDeadline(ms: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  let turn: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => {
    turn = setImmediate(() => {
      turn = setImmediate(() => controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')));
    });
  }, ms);
  return {
    signal: controller.signal,
    clear: () => {
      clearTimeout(timer);
      if (turn) clearImmediate(turn);
    },
  };
}

export function createServiceClient(opts: ServiceClientOptions): ServiceClient {
  const { timeoutMs, logger } = opts;
  const baseUrl = trimSlash(opts.baseUrl);
  const webhookUrl = trimSlash(opts.webhookUrl);
  const agent = new Agent({
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 30_000,
    // no timers of undici's own on an answer: they would fire as late as the deadline's and read
    // nothing first (see answerDeadline); the deadline covers headers and body
    headersTimeout: 0,
    bodyTimeout: 0,
    connect: { timeout: timeoutMs },
    connections: 64,
  });
  const dispatcher = reportingSends(agent);

  function headersFor(apiKey: string, auth: Auth, hasBody: boolean): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json', 'user-agent': 'shopify-email-connector' };
    if (hasBody) h['content-type'] = 'application/json';
    if (auth === 'bearer') h.authorization = `Bearer ${apiKey}`;
    else h['x-service-api-key'] = apiKey;
    return h;
  }

  async function once(apiKey: string, call: Call, path: string, started: number): Promise<Answer | ServiceFailure> {
    const hasBody = call.body !== undefined;
    const deadline = answerDeadline(timeoutMs);
    // whether the request reached a connection: one that never did cannot have been accepted
    let written = false;
    const onSent = (at: number) => {
      written = true;
      call.onSent?.(at);
    };
    try {
      const res = await request(`${call.origin}${path}`, {
        dispatcher,
        method: call.method,
        headers: headersFor(apiKey, call.auth, hasBody),
        body: hasBody ? JSON.stringify(call.body) : undefined,
        signal: deadline.signal,
        // passed through to dispatch (reportingSends): not an option undici itself reads
        ...{ onSent },
      });
      const text = await readCapped(res.body);
      return {
        kind: 'answer',
        status: res.statusCode,
        headers: res.headers,
        text,
        body: parseJson(text),
        rate: parseRateInfo(res.headers),
        durationMs: Math.round(performance.now() - started),
      };
    } catch (err) {
      return failureFromError(err, { timeoutMs, durationMs: Math.round(performance.now() - started), written });
    } finally {
      deadline.clear();
    }
  }

  /**
   * Sends the call (with the 404 path fallback); non-2xx answers become failures, except a 404
   * that `keep404` accepts. A redirect is never followed (undici's request does not follow them):
   * the key goes to the configured address only.
   */
  async function send(apiKey: string, call: Call, opts: { keep404?: (a: Answer) => boolean } = {}): Promise<Answer | ServiceFailure> {
    if (!USABLE_KEY.test(apiKey)) {
      // Empty, or characters no header can carry: no service would accept it, so do not send it.
      const refused: ServiceFailure = {
        kind: 'auth',
        message: 'The API key is empty or contains characters that cannot be sent, so it is not a valid key.',
        rate: {},
        durationMs: 0,
        mayHaveArrived: false,
      };
      log(call, call.paths[0] ?? '', refused);
      return refused;
    }
    const started = performance.now();
    let result: Answer | ServiceFailure | undefined;
    let path = '';
    for (const [i, p] of call.paths.entries()) {
      path = p;
      result = await once(apiKey, call, p, started);
      const more = i < call.paths.length - 1;
      if (!(result.kind === 'answer' && result.status === 404 && more)) break;
      logger.debug({ service: { endpoint: call.endpoint, path: p } }, 'email service answered 404; trying the alternative path');
    }
    const r = result as Answer | ServiceFailure;
    let out: Answer | ServiceFailure = r;
    if (r.kind === 'answer' && (r.status < 200 || r.status >= 300) && !(r.status === 404 && opts.keep404?.(r))) {
      out = failureFromResponse({ ...r, setting: call.setting });
    }
    if (out.kind !== 'answer') out = { ...out, message: redactSecret(out.message, apiKey) };
    log(call, path, out);
    return out;
  }

  function log(call: Call, path: string, r: Answer | ServiceFailure): void {
    const fields = {
      service: {
        endpoint: call.endpoint,
        method: call.method,
        path,
        status: r.status,
        durationMs: r.durationMs,
        rate: r.rate,
        outcome: r.kind === 'answer' ? 'ok' : r.kind,
      },
    };
    if (r.kind === 'answer') logger.debug(fields, 'email service request succeeded');
    else if (r.kind === 'not_acceptable')
      logger.error({ ...fields, err: r.message }, 'email service answered 406: the connector sent a request it cannot accept (bug)');
    else logger.debug({ ...fields, err: r.message }, 'email service request failed');
  }

  function ok<T>(a: Answer, value: T): ServiceResult<T> {
    return { kind: 'ok', value, status: a.status, rate: a.rate, durationMs: a.durationMs };
  }

  function fail(a: Answer, kind: ServiceFailure['kind'], message: string, apiKey: string): ServiceFailure {
    return {
      kind,
      status: a.status,
      message: redactSecret(message, apiKey),
      rate: a.rate,
      durationMs: a.durationMs,
      mayHaveArrived: false,
    };
  }

  /** A 2xx that is no acceptance (see failureFromSuccess), logged as the failure it is. */
  function refusedSuccess(a: Answer, call: Call, json: 'required' | 'unless-text', apiKey: string): ServiceFailure | null {
    const f = failureFromSuccess({ ...a, setting: call.setting }, json);
    if (!f) return null;
    const out = { ...f, message: redactSecret(f.message, apiKey) };
    log(call, call.paths[call.paths.length - 1] ?? '', out);
    return out;
  }

  return {
    async validateKey(apiKey, shop) {
      const a = await send(apiKey, {
        endpoint: 'validate_key',
        method: 'POST',
        paths: PATHS.validate,
        origin: baseUrl,
        setting: 'SERVICE_BASE_URL',
        auth: 'bearer',
        body: { type: 'shopify', data: { shop_id: shop.shopId, shop_name: shop.shopName } },
      });
      if (a.kind !== 'answer') return a;
      // A 200 is only a success when it names a workspace. `success: false` is the service
      // saying the key is not valid (auth). A 200 without a workspace id is a service we do not
      // understand: retryable, so the merchant sees "service unavailable", not "invalid key".
      const b = a.body;
      if (isRecord(b) && b.success === false) return fail(a, 'auth', 'The email service reported the API key as not valid.', apiKey);
      const id = isRecord(b) ? b.workspace_id : undefined;
      if (typeof id !== 'string' && typeof id !== 'number') {
        return fail(a, 'retryable', 'The email service validated the key but did not say which workspace it belongs to.', apiKey);
      }
      const name = isRecord(b) && typeof b.workspace_name === 'string' ? b.workspace_name : '';
      return ok<Workspace>(a, { workspaceId: String(id), workspaceName: name });
    },

    async checkKey(apiKey) {
      const a = await send(apiKey, {
        endpoint: 'check_key',
        method: 'GET',
        paths: PATHS.check,
        origin: baseUrl,
        setting: 'SERVICE_BASE_URL',
        auth: 'header',
      });
      if (a.kind !== 'answer') return a;
      // The spec gives both an empty 200 and {"success": true}; only an explicit false fails.
      if (isRecord(a.body) && a.body.success === false)
        return fail(a, 'auth', 'The email service reported the API key as not valid.', apiKey);
      return ok<void>(a, undefined);
    },

    async listLists(apiKey) {
      const a = await send(apiKey, {
        endpoint: 'list_lists',
        method: 'GET',
        paths: PATHS.lists,
        origin: baseUrl,
        setting: 'SERVICE_BASE_URL',
        auth: 'header',
      });
      if (a.kind !== 'answer') return a;
      const items = extractArray(a.body) ?? [];
      return ok<ServiceList[]>(a, items.map(normaliseList));
    },

    async listCustomFields(apiKey) {
      const a = await send(apiKey, {
        endpoint: 'list_custom_fields',
        method: 'GET',
        paths: PATHS.customFields,
        origin: baseUrl,
        setting: 'SERVICE_BASE_URL',
        auth: 'header',
      });
      if (a.kind !== 'answer') return a;
      const items = extractArray(a.body) ?? [];
      return ok<ServiceCustomField[]>(a, items.map(normaliseCustomField));
    },

    async deleteContact(apiKey, email, options) {
      const call: Call = {
        endpoint: 'delete_contact',
        method: 'POST',
        paths: PATHS.deleteContact,
        origin: baseUrl,
        setting: 'SERVICE_BASE_URL',
        auth: 'header',
        body: { email },
        onSent: options?.onSent,
      };
      // A 404 is "no such contact" only when the service said it, in JSON as it answers
      // everything: a 404 page from a proxy or a wrong host is a wrong address, and a GDPR delete
      // must never count as done on it. (A wrong path on the service's own host would answer
      // in its JSON too and cannot be told apart; the key check and connect use the same
      // SERVICE_BASE_URL, and a wrong one fails them.)
      const a = await send(apiKey, call, { keep404: (r) => isRecord(r.body) });
      if (a.kind !== 'answer') return a;
      if (a.status === 404) return ok(a, { alreadyGone: true });
      // plain text ("User created successfully", as the spec words it) or empty is success; an
      // HTML page or success: false is not
      return refusedSuccess(a, call, 'unless-text', apiKey) ?? ok(a, { alreadyGone: false });
    },

    async sendEvent(apiKey, body, options) {
      const call: Call = {
        endpoint: 'send_event',
        method: 'POST',
        paths: PATHS.send,
        origin: webhookUrl,
        setting: 'SERVICE_WEBHOOK_URL',
        auth: 'header',
        body,
        onSent: options?.onSent,
      };
      const a = await send(apiKey, call);
      if (a.kind !== 'answer') return a;
      return refusedSuccess(a, call, 'required', apiKey) ?? ok<void>(a, undefined);
    },

    async close() {
      await agent.close();
    },
  };
}
