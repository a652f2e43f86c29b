// /api/backfill: start, follow and cancel the historical import. Behind the session-token
// middleware like every /api route; it runs here too unless it already ran for this request.
import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { KINDS } from '../backfill/progress';
import type { BackfillUseCases } from '../admin/backfill';
import { HttpError } from './errors';
import { shopOf } from './session-token';

export interface BackfillRoutesDeps {
  auth: RequestHandler;
  backfill: BackfillUseCases;
  now?: () => Date;
}

const since = z.union([
  z.literal('all'),
  z.iso.date().transform((d) => new Date(`${d}T00:00:00Z`)),
  z.iso.datetime({ offset: true }).transform((d) => new Date(d)),
]);

export const startBackfillBody = z
  .object({
    since: since.optional(),
    kinds: z
      .array(z.enum(KINDS))
      .min(1, 'name at least one of customers, orders')
      .refine((k) => new Set(k).size === k.length, 'kinds must not repeat')
      .optional(),
  })
  .strict();

function parseBody(value: unknown): z.infer<typeof startBackfillBody> {
  const r = startBackfillBody.safeParse(value ?? {});
  if (!r.success) {
    const i = r.error.issues[0]!;
    const where = i.path.length ? `${i.path.join('.')}: ` : '';
    const message = i.path[0] === 'since' && i.code === 'invalid_union' ? 'must be an ISO 8601 date or "all"' : i.message;
    throw new HttpError(400, 'invalid_request', `${where}${message}`);
  }
  return r.data;
}

export function backfillRoutes(deps: BackfillRoutesDeps): Router {
  const r = Router();
  const now = deps.now ?? (() => new Date());
  // the admin router may already have authenticated this request: running the middleware twice is harmless but costs queries
  r.use('/api/backfill', (req, res, next) => (res.locals.shop ? next() : deps.auth(req, res, next)));

  r.post('/api/backfill', async (req, res) => {
    const body = parseBody(req.body);
    if (body.since instanceof Date && body.since.getTime() > now().getTime()) {
      throw new HttpError(400, 'invalid_request', 'since: must not be in the future');
    }
    const result = await deps.backfill.start(shopOf(res).id, { since: body.since, kinds: body.kinds });
    res.status(202).json({ backfill_id: result.backfill_id });
  });

  r.get('/api/backfill', async (_req, res) => {
    res.json(await deps.backfill.status(shopOf(res).id));
  });

  r.delete('/api/backfill', async (_req, res) => {
    res.json(await deps.backfill.cancel(shopOf(res).id));
  });
  return r;
}
