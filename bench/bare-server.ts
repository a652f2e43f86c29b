// The baselines of the intake benchmarks: an express route that only reads the raw body,
// verifies the Shopify HMAC (with the app's own function) and answers 200, and one that only
// reads a storefront batch and answers 204. No database.
import type { AddressInfo } from 'node:net';
import express from 'express';
import { PIXEL_BODY_LIMIT, PIXEL_PATH } from '../src/http/pixel.route';
import { verifyShopifyHmac, WEBHOOK_BODY_LIMIT } from '../src/http/webhooks.route';

const secret = process.env.SHOPIFY_API_SECRET ?? 'sandbox-client-secret';
const app = express();
app.disable('x-powered-by');
app.post('/webhooks', express.raw({ type: () => true, limit: WEBHOOK_BODY_LIMIT }), (req, res) => {
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  const header = req.headers['x-shopify-hmac-sha256'];
  if (!verifyShopifyHmac(raw, Array.isArray(header) ? header[0] : header, secret)) {
    res.status(401).json({ error: { code: 'invalid_hmac', message: 'bad signature' } });
    return;
  }
  res.status(200).json({ outcome: 'accepted' });
});
// the pixel's ceiling: read the raw batch (64 KB at most), check its type, answer 204 with CORS
app.post(PIXEL_PATH, express.raw({ type: () => true, limit: PIXEL_BODY_LIMIT, inflate: false }), (req, res) => {
  res.set('Access-Control-Allow-Origin', '*');
  if (!/^\s*(text\/plain|application\/json)/i.test(req.headers['content-type'] ?? '') || !Buffer.isBuffer(req.body)) {
    res.status(415).end();
    return;
  }
  res.status(204).end();
});
const server = app.listen(0, '127.0.0.1', () => {
  server.keepAliveTimeout = 65_000;
  process.stdout.write(`${JSON.stringify({ ready: true, port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
