// The operations routes: /healthz (the process is alive), /readyz (the database answers) and
// /metrics (Prometheus text). /healthz is always free and costs nothing. /readyz stays free, for
// probes and load balancers that send no header; concurrent checks share one `SELECT 1`. /metrics
// answers only `Authorization: Bearer <METRICS_TOKEN>` when a token is configured; its gauges
// come from reads cached by Metrics, so scrapes cost no query of their own.
import { createHash, timingSafeEqual } from 'node:crypto';
import { Router, type RequestHandler } from 'express';
import type { Db } from '../db/client';
import type { Metrics } from '../observability/metrics';

export interface OpsDeps {
  db: Db;
  metrics: Metrics;
  isShuttingDown: () => boolean;
  /** METRICS_TOKEN: when set, /metrics requires it as a bearer token. */
  metricsToken?: string;
}

/** The routes a listener serves: all three, or /healthz alone (a public port when OPS_PORT is set). */
export type OpsRoutes = 'all' | 'health';

export function opsRoutes(deps: OpsDeps, serve: OpsRoutes = 'all'): Router {
  const r = Router();
  r.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  if (serve === 'health') return r;

  let probe: Promise<unknown> | null = null;
  const databaseAnswers = () =>
    (probe ??= withTimeout(deps.db.$queryRawUnsafe('SELECT 1'), 2000).finally(() => {
      probe = null;
    }));
  r.get('/readyz', async (_req, res) => {
    if (deps.isShuttingDown()) {
      res.status(503).json({ status: 'shutting_down' });
      return;
    }
    try {
      await databaseAnswers();
      res.json({ status: 'ready', database: 'ok' });
    } catch {
      res.status(503).json({ status: 'unavailable', database: 'unreachable' });
    }
  });
  r.get('/metrics', bearer(deps.metricsToken), async (_req, res) => {
    try {
      res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
    } catch {
      res.status(503).type('text/plain').send('# metrics unavailable: database unreachable\n');
    }
  });
  return r;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Lets a request through when it carries `Authorization: Bearer <token>`, or when no token is
 * configured. The comparison takes the same time whatever the guess (digests of equal length,
 * timingSafeEqual), and the 401 says nothing about the token.
 */
function bearer(token: string | undefined): RequestHandler {
  if (!token) return (_req, _res, next) => next();
  const expected = digest(token);
  return (req, res, next) => {
    const m = /^Bearer ([^\s]+)$/i.exec(req.get('authorization') ?? '');
    if (m && timingSafeEqual(digest(m[1]!), expected)) return next();
    res.status(401).set('WWW-Authenticate', 'Bearer realm="metrics"').type('text/plain').send('unauthorized\n');
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timeout')), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
