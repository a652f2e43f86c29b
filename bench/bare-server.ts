// The baseline for the ingest benchmark: an express route that only reads the raw body,
// verifies the Shopify HMAC (with the app's own function) and answers 200. No database.
import type { AddressInfo } from 'node:net';
import express from 'express';
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
const server = app.listen(0, '127.0.0.1', () => {
  server.keepAliveTimeout = 65_000;
  process.stdout.write(`${JSON.stringify({ ready: true, port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
