// POST /webhooks, stage 1: raw body → HMAC → headers → one durable write (group commit) → 200.
// No JSON parsing and no mapping here: stage 2 does both, so Shopify gets its answer in
// milliseconds whatever the load, and a 200 always means the webhook is stored.
import { createHmac, timingSafeEqual } from 'node:crypto';
import express, { Router } from 'express';
import type { Intake } from '../intake/intake';
import { normalizeTopic } from '../mapping';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { sanitizeShop } from '../integrations/shopify/sanitize';
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

/**
 * Whether the bytes can be a JSON object, without parsing them: the first and last non-space
 * bytes are braces and no raw NUL is inside (JSON escapes control characters). A body that
 * passes this but is still not JSON is recorded by stage 2 as rejected.
 */
export function looksLikeJsonObject(raw: Buffer): boolean {
  let i = 0;
  let j = raw.length - 1;
  const space = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
  while (i <= j && space(raw[i]!)) i++;
  while (j >= i && space(raw[j]!)) j--;
  return j > i && raw[i] === 0x7b && raw[j] === 0x7d && raw.indexOf(0) === -1;
}

export interface WebhookRouteDeps {
  apiSecret: string;
  intake: Intake;
  logger: Logger;
  metrics: Metrics;
  now?: () => Date;
}

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.trim() || undefined;

function timestamp(v: string | undefined): Date | null {
  if (!v) return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : new Date(t);
}

export function webhooksRoute(deps: WebhookRouteDeps): Router {
  const r = Router();
  const now = deps.now ?? (() => new Date());
  r.post('/webhooks', express.raw({ type: () => true, limit: WEBHOOK_BODY_LIMIT }), async (req, res) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const topicHeader = header(req.headers['x-shopify-topic']);
    if (!verifyShopifyHmac(raw, header(req.headers['x-shopify-hmac-sha256']), deps.apiSecret)) {
      deps.metrics.webhooksReceived.inc({ topic: 'unknown', outcome: 'invalid_hmac' });
      return sendError(res, 401, 'invalid_hmac', 'The webhook signature is missing or invalid');
    }
    const shopDomain = sanitizeShop(header(req.headers['x-shopify-shop-domain']));
    const webhookId = header(req.headers['x-shopify-webhook-id']);
    const apiVersion = header(req.headers['x-shopify-api-version']);
    if (!shopDomain || !webhookId || !topicHeader || webhookId.length > 255 || topicHeader.length > 100 || (apiVersion?.length ?? 0) > 32) {
      deps.metrics.webhooksReceived.inc({ topic: 'unknown', outcome: 'bad_request' });
      return sendError(res, 400, 'missing_headers', 'X-Shopify-Topic, X-Shopify-Shop-Domain and X-Shopify-Webhook-Id are required');
    }
    const topic = normalizeTopic(topicHeader);
    if (!looksLikeJsonObject(raw)) {
      deps.metrics.webhooksReceived.inc({ topic, outcome: 'bad_request' });
      return sendError(res, 400, 'invalid_json', 'The webhook body could not be read: it is not a JSON object');
    }
    let outcome: 'accepted' | 'duplicate';
    try {
      outcome = await deps.intake.accept({
        webhookId,
        shopDomain,
        topic,
        kind: 'webhook',
        body: raw.toString('utf8'),
        apiVersion: apiVersion ?? null,
        triggeredAt: timestamp(header(req.headers['x-shopify-triggered-at'])),
        receivedAt: now(),
      });
    } catch (err) {
      // nothing of this request was stored: Shopify retries it
      deps.logger.error({ err: (err as Error).message, topic }, 'could not store a webhook; answered 503 so Shopify retries');
      deps.metrics.webhooksReceived.inc({ topic, outcome: 'unavailable' });
      return sendError(res, 503, 'unavailable', 'The webhook could not be stored; please retry');
    }
    deps.metrics.webhooksReceived.inc({ topic, outcome });
    res.status(200).json({ outcome });
  });
  return r;
}
