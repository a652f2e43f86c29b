// POST /webhooks: raw body → HMAC → ingest use case → status code. Only stores and answers;
// delivery happens in the worker, so Shopify gets its answer in milliseconds.
import { createHmac, timingSafeEqual } from 'node:crypto';
import express, { Router } from 'express';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { sanitizeShop } from '../shopify/sanitize';
import type { IngestInput, IngestResult } from '../use-cases/ingest-webhook';
import { sendError } from './errors';

export const WEBHOOK_BODY_LIMIT = 5 * 1024 * 1024;

/** HMAC-SHA256 of the raw bytes, base64, compared in constant time. */
export function verifyShopifyHmac(raw: Buffer, header: string | undefined, secret: string): boolean {
  if (!header) return false;
  const expected = createHmac('sha256', secret).update(raw).digest();
  let given: Buffer;
  try {
    given = Buffer.from(header, 'base64');
  } catch {
    return false;
  }
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export interface WebhookRouteDeps {
  apiSecret: string;
  ingest: (input: IngestInput) => Promise<IngestResult>;
  logger: Logger;
  metrics: Metrics;
}

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.trim() || undefined;

export function webhooksRoute(deps: WebhookRouteDeps): Router {
  const r = Router();
  r.post('/webhooks', express.raw({ type: () => true, limit: WEBHOOK_BODY_LIMIT }), async (req, res) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const topic = header(req.headers['x-shopify-topic']) ?? 'unknown';
    if (!verifyShopifyHmac(raw, header(req.headers['x-shopify-hmac-sha256']), deps.apiSecret)) {
      deps.metrics.webhooksReceived.inc({ topic, outcome: 'invalid_hmac' });
      return sendError(res, 401, 'invalid_hmac', 'The webhook signature is missing or invalid');
    }
    const shopDomain = sanitizeShop(header(req.headers['x-shopify-shop-domain']));
    const webhookId = header(req.headers['x-shopify-webhook-id']);
    if (!shopDomain || !webhookId || topic === 'unknown' || webhookId.length > 255 || topic.length > 100) {
      deps.metrics.webhooksReceived.inc({ topic: 'unknown', outcome: 'bad_request' });
      return sendError(res, 400, 'missing_headers', 'X-Shopify-Topic, X-Shopify-Shop-Domain and X-Shopify-Webhook-Id are required');
    }
    const result = await deps.ingest({ topic, shopDomain, webhookId, rawBody: raw.toString('utf8') });
    if (result.status === 400) return sendError(res, 400, 'invalid_json', `The webhook body could not be read: ${result.reason}`);
    res.status(200).json({ outcome: result.outcome });
  });
  return r;
}
