// POST /pixel/events, stage 1 for the storefront: size → content type → key and client id (read
// from the first bytes, no JSON parsing) → rate limits (client id, client IP, shop) → one durable
// write in the webhooks' group commit → 204. Public and cross-origin: any storefront may post
// (CORS *, no credentials).
// Answers, the same for everyone, so the endpoint tells nothing about keys:
//   204  stored, or dropped: an unknown or removed key, or over a rate limit (the pixel never
//        retries, so a 429 would only tell a prober which of its requests counted)
//   400  not a pixel batch (not a JSON object, or not starting with "v", "key", "client_id")
//   405  another method than POST or OPTIONS
//   413  over 64 KB        415  not text/plain or application/json (or compressed)
//   503  the database refused the write (the pixel does not retry: that batch is lost)
// Stage 2 (src/processing/storefront/stage.ts) validates the rest and erases the raw batch.
import { randomUUID } from 'node:crypto';
import express, { Router, type ErrorRequestHandler, type Response } from 'express';
import type { Intake } from '../intake/intake';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { clientAddress, ipKey } from '../intake/client-ip';
import type { PixelKeys } from '../intake/pixel-keys';
import { TokenBuckets } from '../lib/rate-limit';
import { sendError } from './errors';
import { looksLikeJsonObject } from './webhooks.route';

export const PIXEL_BODY_LIMIT = 64 * 1024;
export const PIXEL_PATH = '/pixel/events';
export const PIXEL_RECEIPT_TOPIC = 'pixel/events';

// The pixel writes these three first (JSON.stringify keeps insertion order; its tests check it).
const HEAD = /^\s*\{\s*"v"\s*:\s*1\s*,\s*"key"\s*:\s*"([A-Za-z0-9_-]{1,128})"\s*,\s*"client_id"\s*:\s*"([\x21\x23-\x5b\x5d-\x7e]{1,128})"/;
/** Enough bytes for the head above, whatever its spacing. */
const HEAD_BYTES = 512;

/** The key and client id at the start of a raw batch, without parsing it; null when absent. */
export function readHead(raw: Buffer): { key: string; clientId: string } | null {
  const m = HEAD.exec(raw.subarray(0, HEAD_BYTES).toString('latin1'));
  return m ? { key: m[1]!, clientId: m[2]! } : null;
}

/**
 * Pixel batches a second, per web process: per storefront client id (a page sends a few), per
 * client address, per shop. What one browser or one address sends past them is refused with 429;
 * the shop's limit bounds what one storefront can cost the intake.
 */
export const PIXEL_RATES = { perClient: 2, perIp: 20, perShop: 1000 } as const;

export interface PixelRouteDeps {
  intake: Intake;
  keys: PixelKeys;
  logger: Logger;
  metrics: Metrics;
  now?: () => Date;
  /** The rate limits' clock: milliseconds, monotonic (performance.now unless a test injects one). */
  nowMs?: () => number;
  /** Requests per second, per shop, per client id and per client IP (in this process). */
  ratePerShop: number;
  ratePerClient: number;
  ratePerIp: number;
  /** Proxies in front of the app whose X-Forwarded-For entries are believed (0: the socket's peer). */
  trustProxyHops: number;
}

const ACCEPTED_TYPES = /^\s*(text\/plain|application\/json)\s*(;|$)/i;

function cors(res: Response): void {
  res.set({ 'Access-Control-Allow-Origin': '*', 'Cross-Origin-Resource-Policy': 'cross-origin', 'Timing-Allow-Origin': '*' });
}

export function pixelRoute(deps: PixelRouteDeps): Router {
  const r = Router();
  const now = deps.now ?? (() => new Date());
  const nowMs = deps.nowMs;
  const perClient = new TokenBuckets({ rate: deps.ratePerClient, burst: Math.max(10, deps.ratePerClient * 10), nowMs });
  const perShop = new TokenBuckets({ rate: deps.ratePerShop, burst: Math.max(20, deps.ratePerShop * 2), maxKeys: 50_000, nowMs });
  // the client id is the sender's to choose: one address (a /64 for IPv6) cannot rotate around it
  const perIp = new TokenBuckets({ rate: deps.ratePerIp, burst: Math.max(10, deps.ratePerIp * 10), nowMs });
  const count = (outcome: string) => deps.metrics.pixelRequests.inc({ outcome });
  const done = (res: Response, outcome: string) => {
    count(outcome);
    res.status(204).end();
  };

  r.options(PIXEL_PATH, (_req, res) => {
    cors(res);
    res.set({
      'Access-Control-Allow-Methods': 'POST, OPTIONS',
      'Access-Control-Allow-Headers': 'Content-Type',
      'Access-Control-Max-Age': '86400',
    });
    res.status(204).end();
  });

  r.post(
    PIXEL_PATH,
    (req, res, next) => {
      cors(res);
      if (!ACCEPTED_TYPES.test(req.headers['content-type'] ?? '')) {
        count('unsupported_type');
        return sendError(res, 415, 'unsupported_media_type', 'Send the batch as text/plain (or application/json)');
      }
      next();
    },
    express.raw({ type: () => true, limit: PIXEL_BODY_LIMIT, inflate: false }),
    async (req, res) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const head = looksLikeJsonObject(raw) ? readHead(raw) : null;
      if (!head) {
        count('bad_request');
        return sendError(res, 400, 'invalid_batch', 'Not a pixel batch');
      }
      // the client's bucket first: one client's flood never reaches the key look-up, nor spends its address's
      if (!perClient.take(`${head.key}\u0000${head.clientId}`)) return done(res, 'rate_limited');
      if (!perIp.take(ipKey(clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], deps.trustProxyHops))))
        return done(res, 'rate_limited_ip');
      const shopDomain = await deps.keys.shopFor(head.key);
      if (!shopDomain) return done(res, 'unknown_key');
      if (!perShop.take(shopDomain)) return done(res, 'rate_limited');
      try {
        await deps.intake.accept({
          webhookId: `pixel:${randomUUID()}`,
          shopDomain,
          topic: PIXEL_RECEIPT_TOPIC,
          kind: 'pixel',
          body: raw.toString('utf8'),
          apiVersion: null,
          triggeredAt: null,
          receivedAt: now(),
        });
      } catch (err) {
        deps.logger.error({ err: (err as Error).message }, 'could not store a storefront batch; answered 503 (the pixel does not retry)');
        count('unavailable');
        return sendError(res, 503, 'unavailable', 'The batch could not be stored');
      }
      done(res, 'accepted');
    },
  );

  r.all(PIXEL_PATH, (_req, res) => {
    cors(res);
    res.set('Allow', 'POST, OPTIONS');
    sendError(res, 405, 'method_not_allowed', 'POST a batch of storefront events');
  });

  // errors of the body reader (too large, aborted, encoded): a 4xx with the CORS headers, never a 5xx
  const onError: ErrorRequestHandler = (err, _req, res, _next) => {
    cors(res);
    const e = err as { type?: string; status?: number };
    if (e.type === 'entity.too.large') {
      count('too_large');
      return sendError(res, 413, 'payload_too_large', `The batch is over ${PIXEL_BODY_LIMIT} bytes`);
    }
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') {
      count('unsupported_type');
      return sendError(res, 415, 'unsupported_encoding', 'Unsupported body encoding');
    }
    count('bad_request');
    sendError(
      res,
      typeof e.status === 'number' && e.status >= 400 && e.status < 500 ? e.status : 400,
      'bad_request',
      'The request could not be read',
    );
  };
  r.use(PIXEL_PATH, onError);
  return r;
}
