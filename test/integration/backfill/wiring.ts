// Until src/app/server.ts builds the import itself, tests (and the child process of the kill test)
// attach it to a running app the way server.ts will: same config, same database, the app's
// worker nudged on new work, /api/backfill behind the session-token middleware.
import { Router, type RequestHandler } from 'express';
import type { Config } from '../../../src/config';
import { createBackfill, type BackfillModule, type BackfillModuleDeps } from '../../../src/app/backfill';
import { createSecretBox } from '../../../src/crypto/secret-box';
import { sessionTokenMiddleware } from '../../../src/http/session-token';
import type { Logger } from '../../../src/observability/logger';
import type { RunningServer } from '../../../src/app/server';
import { createShopify } from '../../../src/integrations/shopify/api';
import { createSessionStore } from '../../../src/integrations/shopify/session-storage';
import { createOfflineTokens } from '../../../src/integrations/shopify/tokens';

/**
 * Once server.ts builds the import itself, its runner is stopped here so the test's runner,
 * with test timings, is the only one in the process (the app's /api/backfill keeps answering;
 * both use the same database).
 */
export async function stopAppRunner(app: RunningServer): Promise<void> {
  const own = (app as unknown as { backfill?: { runner?: { stop(): Promise<void> } } }).backfill;
  await own?.runner?.stop();
}

/** A router whose handler is set after the app started (StartOptions.routers is read at start). */
export function lateRouter(): { router: Router; set(r: Router): void } {
  let inner: Router | undefined;
  const router = Router();
  router.use((req, res, next) => (inner ? inner(req, res, next) : next()));
  return { router, set: (r) => void (inner = r) };
}

export function attachBackfill(
  config: Config,
  app: RunningServer,
  logger: Logger,
  runner: BackfillModuleDeps['runner'] = {},
): BackfillModule & { auth: RequestHandler } {
  const db = app.db;
  const shopify = createShopify(config, logger);
  const secrets = createSecretBox(config.encryption.key, config.encryption.previousKeys);
  const sessions = createSessionStore(db, { encrypt: (p, c) => secrets.encrypt(p, c), decrypt: (s, c) => secrets.decrypt(s, c), logger });
  const tokens = createOfflineTokens({ shopify, db, sessions, logger });
  const module = createBackfill({
    db,
    provider: config.dbProvider,
    logger,
    shopify,
    tokens,
    production: config.production,
    adminOrigin: config.shopify.adminOrigin,
    onEnqueued: (shopId) => app.notifyQueued(shopId),
    runner,
  });
  return { ...module, auth: sessionTokenMiddleware({ shopify, db, tokens, logger }) };
}
