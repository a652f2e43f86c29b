// Connecting a shop to its workspace: validate the key with the service, bind the workspace,
// store the key encrypted. Plus the periodic key check, disconnect, and the account's lists
// and custom fields. The key never leaves this module except, encrypted, to the database.
import type { Connection } from '@prisma/client';
import { DecryptError, keyHint, type SecretBox } from '../crypto/secret-box';
import type { Db } from '../db/client';
import { LogOnce, LoopFailures } from '../observability/log-once';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { ConnectionStore } from '../outbox/connection-store';
import type { Pacer } from '../outbox/pacer';
import type { OutboxRepository } from '../outbox/repository';
import type { ServiceClient, ServiceFailure, ServiceResult } from '../integrations/service/types';
import { UseCaseError } from './errors';

export interface ConnectionDeps {
  db: Db;
  client: ServiceClient;
  secrets: SecretBox;
  repo: OutboxRepository;
  /** Every call to the service counts against the workspace's limit, so it takes a slot. */
  pacer: Pacer;
  logger: Logger;
  metrics?: Metrics;
  /** The shop's id and name from Shopify, for shops whose install did not record them. */
  shopIdentity: (domain: string) => Promise<{ shopId: string; shopName: string } | null>;
  now?: () => Date;
  onResumed?: (shopId: string) => void;
  /** After a key is saved (connect or reconnect): e.g. activate the storefront pixel. */
  onConnected?: (shop: { id: string; domain: string }) => void;
  /** After the key is forgotten: e.g. remove the storefront pixel. */
  onDisconnected?: (shop: { id: string; domain: string }) => void;
  /** How often each shop's key is re-checked with the service. */
  keyCheckEveryMs?: number;
}

/**
 * key_unreadable: the saved key cannot be decrypted with any configured encryption key (the
 * server's ENCRYPTION_KEY changed without the old one in ENCRYPTION_KEYS_PREVIOUS). Deliveries
 * are held, not lost, until the key reads again or a new key is saved.
 */
export type ConnectionStatus = 'connected' | 'invalid_key' | 'key_unreadable' | 'disconnected';

/**
 * A problem that holds the shop's deliveries and that the merchant's key does not explain:
 * `service_not_found`, the service's address answered 404 (the app's configuration).
 */
export interface DeliveryProblem {
  code: 'service_not_found';
  /** Deliveries held by it. */
  held: number;
  /** For a person: what happened and what to do. */
  message: string;
}

export const SERVICE_NOT_FOUND_MESSAGE =
  'Deliveries are paused: the email service’s address answered “404 Not Found”. This is a setup problem of the app, not of your API key or your store: ' +
  'the app’s operator must check the address the app sends to (SERVICE_WEBHOOK_URL). Nothing is lost: held deliveries are tried again every minute and resume ' +
  'on their own once the address answers; you can also retry one from the delivery log.';

export interface ConnectionView {
  status: ConnectionStatus;
  workspace_id: string | null;
  workspace_name: string | null;
  key_hint: string | null;
  connected_at: string | null;
  last_delivered_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
  /** Set while deliveries are held for a reason the page must explain beside the key's status. */
  delivery_problem: DeliveryProblem | null;
}

/**
 * The connection as the page sees it: `readable` is whether the saved key decrypts, `problem` a
 * delivery problem the key does not explain.
 */
export function viewOf(c: Connection | null, readable = true, problem: DeliveryProblem | null = null): ConnectionView {
  if (!c) {
    return {
      status: 'disconnected',
      workspace_id: null,
      workspace_name: null,
      key_hint: null,
      connected_at: null,
      last_delivered_at: null,
      last_error: null,
      last_error_at: null,
      delivery_problem: problem,
    };
  }
  return {
    status: !readable ? 'key_unreadable' : c.status === 'connected' ? 'connected' : 'invalid_key',
    workspace_id: c.workspaceId,
    workspace_name: c.workspaceName,
    key_hint: c.keyHint,
    connected_at: c.connectedAt.toISOString(),
    last_delivered_at: c.lastDeliveredAt?.toISOString() ?? null,
    last_error: c.lastError,
    last_error_at: c.lastErrorAt?.toISOString() ?? null,
    delivery_problem: problem,
  };
}

const unavailable = (f: ServiceFailure) =>
  new UseCaseError(
    'service_unavailable',
    `The email service could not be reached or failed (${f.message}). Nothing was changed; please try again.`,
  );

const unreadable = () =>
  new UseCaseError(
    'key_unreadable',
    'The saved API key cannot be read on this server (its encryption key changed). Paste your API key again to resume; deliveries are held, not lost.',
  );

export function createConnectionUseCases(deps: ConnectionDeps) {
  const { db, client, secrets, repo, pacer, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const connections = new ConnectionStore(db);
  const logOnce = new LogOnce(logger);
  const failures = new LoopFailures(logOnce, deps.metrics?.loopFailures);

  /** The saved key, or null when no configured encryption key decrypts it. */
  function keyOf(c: Connection): string | null {
    try {
      return secrets.decrypt(c.apiKeyEnc, c.shopId);
    } catch (err) {
      if (err instanceof DecryptError) return null;
      throw err;
    }
  }

  async function connected(shopId: string): Promise<{ connection: Connection; apiKey: string }> {
    const connection = await db.connection.findUnique({ where: { shopId } });
    if (!connection) throw new UseCaseError('not_connected', 'Connect an API key first.');
    const apiKey = keyOf(connection);
    if (apiKey === null) throw unreadable();
    if (connection.status !== 'connected')
      throw new UseCaseError('saved_key_invalid', 'The saved API key was refused by the service; enter a valid key.');
    return { connection, apiKey };
  }

  /** The shop's deliveries held because the service address answered 404, as the page shows it. */
  async function deliveryProblem(shopId: string): Promise<DeliveryProblem | null> {
    const held = await db.outboxMessage.count({ where: { shopId, status: 'held', heldReason: 'service_not_found' } });
    return held > 0 ? { code: 'service_not_found', held, message: SERVICE_NOT_FOUND_MESSAGE } : null;
  }

  async function markInvalid(shopId: string, reason: string): Promise<void> {
    await connections.keyRefused(shopId, reason, now());
    await repo.holdShop(shopId, 'invalid_key');
  }

  /** Reads from the service with the shop's key; a 401 flips the connection to invalid_key. */
  async function read<T>(shopId: string, call: (key: string) => Promise<ServiceResult<T>>): Promise<T> {
    const { apiKey, connection } = await connected(shopId);
    const took = await pacer.take(connection.workspaceId);
    if (took !== 'ok') {
      throw new UseCaseError(
        'service_unavailable',
        took === 'paused'
          ? 'The email service has paused requests from this key for a while (too many bad requests); please try again in a few minutes.'
          : 'The workspace is busy sending at its rate limit; please try again in a moment.',
      );
    }
    const r = await call(apiKey);
    if (r.kind === 'ok') return r.value;
    if (r.kind === 'auth') {
      await markInvalid(shopId, 'The service refused the API key.');
      throw new UseCaseError('invalid_key', 'The service refused the saved API key; enter a valid key.');
    }
    throw unavailable(r);
  }

  return {
    async get(shopId: string): Promise<ConnectionView> {
      const [c, problem] = await Promise.all([db.connection.findUnique({ where: { shopId } }), deliveryProblem(shopId)]);
      return viewOf(c, c === null || keyOf(c) !== null, problem);
    },

    async connect(shop: { id: string; domain: string }, apiKey: string): Promise<ConnectionView> {
      const row = await db.shop.findUnique({ where: { id: shop.id } });
      let identity = row?.shopifyId && row.name ? { shopId: row.shopifyId, shopName: row.name } : null;
      identity ??= await deps.shopIdentity(shop.domain);
      if (!identity) throw new UseCaseError('shopify_unavailable', 'Could not read the shop’s id and name from Shopify; please try again.');
      const r = await client.validateKey(apiKey, identity);
      if (r.kind === 'auth' || r.kind === 'blocked' || r.kind === 'bad_request') {
        logger.info({ shop: shop.domain, outcome: r.kind }, 'API key refused by the service');
        throw new UseCaseError(
          'invalid_key',
          'This key was refused by the service. Check that you copied the whole key and that it is not revoked.',
        );
      }
      if (r.kind !== 'ok') throw unavailable(r);
      // the validation request counted against the workspace's limit: account for it
      await pacer.record(r.value.workspaceId);
      const at = now();
      const saved = await connections.save(
        shop.id,
        {
          workspaceId: r.value.workspaceId,
          workspaceName: r.value.workspaceName,
          apiKeyEnc: secrets.encrypt(apiKey, shop.id),
          keyHint: keyHint(apiKey),
        },
        at,
      );
      const resumed = await repo.resumeShop(shop.id, ['invalid_key', 'disconnected', 'key_unreadable'], at);
      logger.info({ shop: shop.domain, workspaceId: saved.workspaceId, resumed }, 'shop connected to its workspace');
      if (resumed) deps.onResumed?.(shop.id);
      deps.onConnected?.(shop);
      return viewOf(saved, true, await deliveryProblem(shop.id));
    },

    /** Forgets the key; what was queued is held, not lost, until a key is saved again. */
    async disconnect(shop: { id: string; domain: string }): Promise<void> {
      await db.$transaction(async (tx) => {
        await connections.forget(tx, shop.id);
        await tx.outboxMessage.updateMany({
          where: { shopId: shop.id, status: 'queued' },
          data: { status: 'held', heldReason: 'disconnected' },
        });
      });
      deps.onDisconnected?.(shop);
    },

    lists: (shopId: string) => read(shopId, (k) => client.listLists(k)),
    customFields: (shopId: string) => read(shopId, (k) => client.listCustomFields(k)),

    /**
     * Re-checks keys not checked within the interval (endpoint 2). A 401 flips the connection
     * to invalid_key and holds its deliveries; anything else leaves it as it is.
     */
    async checkKeys(limit = 50): Promise<{ checked: number; invalid: number; failed: number }> {
      const cutoff = new Date(now().getTime() - (deps.keyCheckEveryMs ?? 3_600_000));
      const due = await db.connection.findMany({
        where: { status: 'connected', OR: [{ lastCheckedAt: null }, { lastCheckedAt: { lt: cutoff } }] },
        orderBy: { lastCheckedAt: { sort: 'asc', nulls: 'first' } },
        take: limit,
      });
      let invalid = 0;
      let checked = 0;
      let failed = 0;
      // each shop on its own: one shop's unreadable key or failing check never stops the others
      for (const c of due) {
        try {
          const apiKey = keyOf(c);
          if (apiKey === null) {
            // nothing to ask the service; checked again after the interval, behind the others
            logOnce.log(
              'warn',
              `key-check:${c.shopId}`,
              { shopId: c.shopId },
              'periodic key check: the saved key cannot be decrypted with any configured key (key_unreadable)',
            );
            await connections.checked(c.shopId, now());
            continue;
          }
          // a workspace busy at its limit (or paused) is checked on a later round
          if ((await pacer.take(c.workspaceId, 2_000)) !== 'ok') continue;
          checked += 1;
          const r = await client.checkKey(apiKey);
          if (r.kind === 'auth') {
            invalid += 1;
            await markInvalid(c.shopId, 'The service refused the API key during a periodic check.');
            logger.warn({ shopId: c.shopId }, 'periodic key check: key refused, deliveries held');
          }
          if (r.kind === 'ok' || r.kind === 'auth') await connections.checked(c.shopId, now());
        } catch (err) {
          failed += 1;
          failures.report('key_check', err, 'periodic key check failed for a shop; the others go on', {
            key: `key-check-failed:${c.shopId}`,
            fields: { shopId: c.shopId },
            level: 'warn',
          });
        }
      }
      return { checked, invalid, failed };
    },
  };
}

export type ConnectionUseCases = ReturnType<typeof createConnectionUseCases>;
