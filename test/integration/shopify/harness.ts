// The app's Shopify pieces over real HTTP against the fake shop, on a fresh database.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import { Router } from 'express';
import type { Db } from '../../../src/db/client';
import { createApp } from '../../../src/http/app';
import { authRoutes } from '../../../src/http/auth.routes';
import { sessionTokenMiddleware, shopOf } from '../../../src/http/session-token';
import { createLogger, type Logger } from '../../../src/observability/logger';
import { Metrics } from '../../../src/observability/metrics';
import { startFakeShop, type FakeShop, type FakeShopInit } from '../../../sandbox/fake-shop';
import { createShopify, type ShopifyApi } from '../../../src/integrations/shopify/api';
import { createSessionStore, type SessionStore } from '../../../src/integrations/shopify/session-storage';
import { createOfflineTokens, type OfflineTokens } from '../../../src/integrations/shopify/tokens';
import { testConfig } from '../../helpers/config';
import { openTestDb } from '../../helpers/db';

export const API_KEY = 'test-client-id';
export const API_SECRET = 'test-client-secret-0123456789';

export interface Harness {
  url: string;
  db: Db;
  fake: FakeShop;
  shopify: ShopifyApi;
  sessions: SessionStore;
  tokens: OfflineTokens;
  logger: Logger;
  /** Every log line written so far, for "no secret in logs" checks. */
  logText(): string;
  close(): Promise<void>;
}

export interface HarnessOptions {
  shops?: FakeShopInit[];
  accessTokenTtlSec?: number;
  encrypt?: boolean;
  /** Reuse a database (several apps on one db). */
  db?: Db;
}

/** A test cipher: AES-256-GCM bound to the session id, like the app's crypto module. */
export function testCipher() {
  const key = randomBytes(32);
  return {
    encrypt(plain: string, context: string): string {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(context));
      const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
      return ['t1', iv, ct, c.getAuthTag()].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
    },
    decrypt(stored: string, context: string): string {
      const [v, iv, ct, tag] = stored.split('.');
      if (v !== 't1' || !iv || !ct || !tag) throw new Error('not an envelope');
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url')).setAAD(Buffer.from(context));
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
    },
  };
}

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const opened = opts.db ? null : await openTestDb();
  const db = opts.db ?? opened!.db;
  const fake = await startFakeShop({
    apiKey: API_KEY,
    apiSecret: API_SECRET,
    shops: opts.shops,
    accessTokenTtlSec: opts.accessTokenTtlSec,
  });
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  const logger = createLogger('debug', sink);
  const config = testConfig(opened?.database.url ?? 'file:unused.db', {
    SHOPIFY_API_KEY: API_KEY,
    SHOPIFY_API_SECRET: API_SECRET,
    SHOPIFY_APP_URL: 'https://connector.example.test',
    SHOPIFY_ADMIN_ORIGIN: fake.url,
  });
  const shopify = createShopify(config, logger);
  const sessions = createSessionStore(db, opts.encrypt ? { ...testCipher(), logger } : { logger });
  const tokens = createOfflineTokens({ shopify, db, sessions, logger });
  const deps = { shopify, db, tokens, logger };

  const api = Router();
  api.use('/api', sessionTokenMiddleware(deps));
  api.get('/api/whoami', (_req, res) => {
    res.json(shopOf(res));
  });
  const app = createApp({ db, logger, metrics: new Metrics(), routers: [authRoutes(deps), api] });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    db,
    fake,
    shopify,
    sessions,
    tokens,
    logger,
    logText: () => lines.join(''),
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await fake.close();
      await opened?.close();
    },
  };
}

/** Asserts that none of the secrets appears in the text. */
export function expectNoSecrets(text: string, secrets: Array<string | undefined>): void {
  for (const s of secrets) {
    if (s) expect(text).not.toContain(s);
  }
}
