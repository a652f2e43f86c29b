import { Router } from 'express';
import type { Db } from '../db/client';
import type { Metrics } from '../observability/metrics';

export function opsRoutes(deps: { db: Db; metrics: Metrics; isShuttingDown: () => boolean }): Router {
  const r = Router();
  r.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  r.get('/readyz', async (_req, res) => {
    if (deps.isShuttingDown()) {
      res.status(503).json({ status: 'shutting_down' });
      return;
    }
    try {
      await withTimeout(deps.db.$queryRawUnsafe('SELECT 1'), 2000);
      res.json({ status: 'ready', database: 'ok' });
    } catch {
      res.status(503).json({ status: 'unavailable', database: 'unreachable' });
    }
  });
  r.get('/metrics', async (_req, res) => {
    try {
      res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
    } catch {
      res.status(503).type('text/plain').send('# metrics unavailable: database unreachable\n');
    }
  });
  return r;
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
