// /api/* for the embedded page. Each route: validate with zod, call one use case, map to HTTP.
import { Router, type Request, type RequestHandler } from 'express';
import { z } from 'zod';
import { settingsPatchSchema } from '../settings/settings';
import { DELIVERY_STATUSES, type Activity } from '../admin/activity';
import type { Budget } from '../admin/budget';
import { RECENT_LIMIT, WAITING_LIMIT, type ProductAlertsViewUseCase } from '../admin/product-alerts';
import type { ConnectionUseCases } from '../admin/connection';
import type { SettingsUseCases } from '../admin/settings';
import { HttpError } from './errors';
import { shopOf } from './session-token';

export interface AdminRoutesDeps {
  auth: RequestHandler;
  connection: ConnectionUseCases;
  activity: Activity;
  settings: SettingsUseCases;
  budget: Budget;
  productAlerts: ProductAlertsViewUseCase;
}

function parse<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const r = schema.safeParse(value);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const where = i.path.length ? `${i.path.join('.')}: ` : '';
    throw new HttpError(400, 'invalid_request', `${where}${i.message}`);
  }
  return r.data;
}

const idParam = z.object({
  id: z
    .string()
    .regex(/^[1-9][0-9]{0,9}$/, 'must be a delivery id')
    .transform(Number),
});
const body = (req: Request) => (req.body === undefined ? {} : req.body);

const connectBody = z
  .object({
    api_key: z
      .string()
      .trim()
      .min(8, 'the API key looks too short')
      .max(512, 'the API key looks too long')
      .regex(/^[\x21-\x7e]+$/, 'the API key has characters an API key cannot have'),
  })
  .strict();
const deliveriesQuery = z.object({
  status: z.enum(DELIVERY_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(25),
  cursor: z
    .string()
    .regex(/^[1-9][0-9]{0,9}$/, 'cursor must come from next_cursor')
    .transform(Number)
    .optional(),
});
const productAlertsQuery = z
  .object({
    waiting_limit: z.coerce.number().int().min(1).max(WAITING_LIMIT.max).optional(),
    recent_limit: z.coerce.number().int().min(1).max(RECENT_LIMIT.max).optional(),
  })
  .strict();
const testEventBody = z.object({ email: z.string().trim().toLowerCase().email('must be an email address').max(254).optional() }).strict();

export function adminRoutes(deps: AdminRoutesDeps): Router {
  const r = Router();
  const { connection, activity, settings, budget, productAlerts } = deps;
  r.use('/api', deps.auth);

  r.get('/api/connection', async (_req, res) => {
    res.json(await connection.get(shopOf(res).id));
  });
  r.put('/api/connection', async (req, res) => {
    const { api_key } = parse(connectBody, body(req));
    res.json(await connection.connect(shopOf(res), api_key));
  });
  r.delete('/api/connection', async (_req, res) => {
    await connection.disconnect(shopOf(res));
    res.status(204).end();
  });
  r.get('/api/lists', async (_req, res) => {
    res.json({ lists: await connection.lists(shopOf(res).id) });
  });
  r.get('/api/custom-fields', async (_req, res) => {
    res.json({ custom_fields: await connection.customFields(shopOf(res).id) });
  });

  r.get('/api/settings', async (_req, res) => {
    res.json(await settings.get(shopOf(res).id));
  });
  r.put('/api/settings', async (req, res) => {
    res.json(await settings.update(shopOf(res).id, parse(settingsPatchSchema, body(req))));
  });

  r.get('/api/deliveries', async (req, res) => {
    res.json(await activity.list(shopOf(res).id, parse(deliveriesQuery, req.query)));
  });
  r.get('/api/deliveries/:id', async (req, res) => {
    res.json(await activity.get(shopOf(res).id, parse(idParam, req.params).id));
  });
  r.post('/api/deliveries/:id/retry', async (req, res) => {
    await activity.retry(shopOf(res).id, parse(idParam, req.params).id);
    res.status(202).json({ status: 'queued' });
  });
  r.post('/api/test-event', async (req, res) => {
    const shop = shopOf(res);
    const { email } = parse(testEventBody, body(req));
    res.status(202).json({
      delivery_id: await activity.testEvent(shop, email ?? `connector-test@${shop.domain.replace(/\.myshopify\.com$/, '')}.example.com`),
    });
  });
  r.get('/api/stats', async (_req, res) => {
    res.json(await activity.stats(shopOf(res)));
  });
  r.get('/api/budget', async (_req, res) => {
    res.json(await budget.view(shopOf(res).id));
  });
  r.get('/api/product-alerts', async (req, res) => {
    const q = parse(productAlertsQuery, req.query);
    res.json(await productAlerts.view(shopOf(res), { waitingLimit: q.waiting_limit, recentLimit: q.recent_limit }));
  });
  r.get('/api/data-requests', async (_req, res) => {
    res.json({ data_requests: await activity.dataRequests(shopOf(res).id) });
  });
  r.get('/api/data-requests/:id', async (req, res) => {
    res.json(await activity.dataRequest(shopOf(res).id, parse(idParam, req.params).id));
  });
  return r;
}
