// createApp(deps): the express app without listen(), so tests drive it with supertest.
// createOpsApp(deps): the operations routes alone, for a listener of their own (OPS_PORT).
// createHttpServer(app, timeouts): the HTTP server for either.
import http from 'node:http';
import express, { type ErrorRequestHandler, type Router } from 'express';
import type { Db } from '../db/client';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { UseCaseError } from '../admin/errors';
import { HttpError, sendError, sendUseCaseError } from './errors';
import { opsRoutes, type OpsRoutes } from './ops.routes';

export interface AppDeps {
  db: Db;
  logger: Logger;
  metrics: Metrics;
  isShuttingDown?: () => boolean;
  /** METRICS_TOKEN: /metrics then requires it as a bearer token. */
  metricsToken?: string;
  /** The operations routes this app serves: all (default), or /healthz alone when they have a listener of their own. */
  ops?: OpsRoutes;
  /** Routers mounted first, before the JSON body parser (they read raw bodies): /pixel/events, /webhooks. */
  rawRouters?: Router[];
  /** Routers mounted after it: /auth, /api/*, the admin page. */
  routers?: Router[];
}

export const JSON_LIMIT = '1mb';

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', true);
  // the intake's routes first: they take nearly every request, and each router a request passes
  // through before its own costs it a dispatch
  for (const r of deps.rawRouters ?? []) app.use(r);
  app.use(
    opsRoutes(
      { db: deps.db, metrics: deps.metrics, isShuttingDown: deps.isShuttingDown ?? (() => false), metricsToken: deps.metricsToken },
      deps.ops,
    ),
  );
  app.use('/api', express.json({ limit: JSON_LIMIT, strict: true }));
  for (const r of deps.routers ?? []) app.use(r);
  app.use('/api', (_req, res) => sendError(res, 404, 'not_found', 'No such API route'));

  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    if (res.headersSent) return;
    if (err instanceof UseCaseError) return sendUseCaseError(res, err);
    if (err instanceof HttpError) return sendError(res, err.status, err.code, err.message);
    const e = err as { type?: string; status?: number };
    if (e.type === 'entity.too.large') return sendError(res, 413, 'payload_too_large', 'The request body is too large');
    if (e.type === 'entity.parse.failed') return sendError(res, 400, 'invalid_json', 'The request body is not valid JSON');
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported')
      return sendError(res, 415, 'unsupported_encoding', 'Unsupported body encoding');
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500)
      return sendError(res, e.status, 'bad_request', 'The request could not be read');
    deps.logger.error({ err: { message: (err as Error)?.message, name: (err as Error)?.name }, path: req.path }, 'unhandled error');
    sendError(res, 500, 'internal_error', 'Something went wrong on our side; nothing was lost, please retry');
  };
  app.use(onError);
  return app;
}

/** The operations routes alone (/healthz, /readyz, /metrics): nothing else answers but 404. */
export function createOpsApp(deps: Pick<AppDeps, 'db' | 'metrics' | 'isShuttingDown' | 'metricsToken'>): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(
    opsRoutes({
      db: deps.db,
      metrics: deps.metrics,
      isShuttingDown: deps.isShuttingDown ?? (() => false),
      metricsToken: deps.metricsToken,
    }),
  );
  app.use((_req, res) => sendError(res, 404, 'not_found', 'Only /healthz, /readyz and /metrics are served here'));
  return app;
}

/** How often Node checks its connections against the headers and request timeouts. */
export const TIMEOUT_CHECK_MS = 1_000;

/** The server's limits on a client (see createHttpServer). */
export interface HttpTimeouts {
  /** A request's headers must have arrived this long after its first byte (slow clients are cut off with 408). */
  headersMs: number;
  /** A whole request, body included, must have arrived this long after its first byte. */
  requestMs: number;
  /** An idle kept-alive connection is closed after this long. */
  keepAliveMs: number;
}

export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 65_000 };

/**
 * The HTTP server for an express app, whose requests and responses are made with the app's own
 * prototypes. Express gives every request and response the app's prototype
 * (`Object.setPrototypeOf(req, app.request)`); on Node's request objects that leaves far more
 * alive at each young-generation GC, and each of those GCs then pauses the process many times
 * longer than a plain Node server's. Made with that prototype already, express's call changes
 * nothing.
 */
export function createHttpServer(app: express.Express, timeouts: HttpTimeouts = DEFAULT_HTTP_TIMEOUTS): http.Server {
  const proto = app as unknown as { request: object; response: object };
  function AppRequest(socket: unknown) {
    return Reflect.construct(http.IncomingMessage, [socket], AppRequest) as http.IncomingMessage;
  }
  AppRequest.prototype = proto.request;
  function AppResponse(...args: unknown[]) {
    return Reflect.construct(http.ServerResponse, args, AppResponse) as http.ServerResponse;
  }
  AppResponse.prototype = proto.response;
  const server = http.createServer(
    {
      IncomingMessage: AppRequest as unknown as typeof http.IncomingMessage,
      ServerResponse: AppResponse as unknown as typeof http.ServerResponse,
      // A client that sends its headers or its body slowly (slowloris) holds a socket and a
      // parser until cut off: with 408 once its headers are not in after headersMs, or its whole
      // request after requestMs (Node's own defaults are 60 s and 300 s). A 5 MB webhook needs
      // under 170 KB/s to arrive within the default 30 s. Node checks every TIMEOUT_CHECK_MS
      // (30 s by default), so a client is cut off within its timeout plus that.
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      connectionsCheckingInterval: TIMEOUT_CHECK_MS,
    },
    app,
  );
  // idle keep-alive connections outlive a load balancer's (60 s by default), which then never
  // sends a request on a connection this server is closing
  server.keepAliveTimeout = timeouts.keepAliveMs;
  return server;
}
