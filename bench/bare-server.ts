// The baselines of the intake benchmarks: an express route that only reads the raw body,
// verifies the Shopify HMAC (with the app's own function) and answers 200, and one that only
// reads a storefront batch and answers 204. No database.
//
// With BARE_SYNC_DIR set, the disk's floor: each route also writes the raw body to a journal
// file in that directory and answers only once an fdatasync of it has covered the write, the
// sync shared by the writes made meanwhile (the app's own wal-flush.ts, as SQLite's receipts
// do). Still no database: what is left above this row is the database's own work and the
// connector's, and a tail this row shares is the disk's.
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import express from 'express';
import { createWalFlush } from '../src/db/wal-flush';
import { createHttpServer } from '../src/http/app';
import { PIXEL_BODY_LIMIT, PIXEL_PATH } from '../src/http/pixel.route';
import { verifyShopifyHmac, WEBHOOK_BODY_LIMIT } from '../src/http/webhooks.route';

const secret = process.env.SHOPIFY_API_SECRET ?? 'sandbox-client-secret';

/** Stores a body durably before the answer (BARE_SYNC_DIR), or does nothing. */
function journal(dir: string | undefined): (raw: Buffer) => Promise<void> {
  if (!dir) return async () => undefined;
  // wal-flush syncs `<file>-wal`; the journal is rewritten from its start past 16 MB, as SQLite
  // reuses its WAL after a checkpoint, so the file stops growing
  const file = path.join(dir, 'journal');
  const fd = fs.openSync(`${file}-wal`, 'w');
  const wal = createWalFlush(file);
  const WRAP = 16 * 1024 * 1024;
  let at = 0;
  return (raw) => {
    if (at + raw.length > WRAP) at = 0;
    fs.writeSync(fd, raw, 0, raw.length, at);
    at += raw.length;
    return wal.flush();
  };
}

const stored = journal(process.env.BARE_SYNC_DIR);
const app = express();
app.disable('x-powered-by');
app.post('/webhooks', express.raw({ type: () => true, limit: WEBHOOK_BODY_LIMIT }), async (req, res) => {
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  const header = req.headers['x-shopify-hmac-sha256'];
  if (!verifyShopifyHmac(raw, Array.isArray(header) ? header[0] : header, secret)) {
    res.status(401).json({ error: { code: 'invalid_hmac', message: 'bad signature' } });
    return;
  }
  await stored(raw);
  res.status(200).json({ outcome: 'accepted' });
});
// the pixel's ceiling: read the raw batch (64 KB at most), check its type, answer 204 with CORS
app.post(PIXEL_PATH, express.raw({ type: () => true, limit: PIXEL_BODY_LIMIT, inflate: false }), async (req, res) => {
  res.set('Access-Control-Allow-Origin', '*');
  if (!/^\s*(text\/plain|application\/json)/i.test(req.headers['content-type'] ?? '') || !Buffer.isBuffer(req.body)) {
    res.status(415).end();
    return;
  }
  await stored(req.body);
  res.status(204).end();
});
// the app's own HTTP server (src/http/app.ts), so the ceiling's GC is the connector's
const server = createHttpServer(app);
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ ready: true, port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
