// The webhook intake: dedupe on the webhook id, map the payload with the pure mappers, and
// store receipt + outbox messages in one transaction. Never waits on the email service.
import { Prisma } from '@prisma/client';
import type { Db } from '../db/client';
import { InvalidJsonError, lookupKeys, mapWebhook, normalizeTopic, parseWebhookBody, type MapOutput } from '../mapping';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { parseStoredSettings } from '../settings/settings';
import type { GdprUseCases } from './gdpr';
import { insertNew, toRow } from './store-messages';

export interface IngestInput {
  topic: string;
  shopDomain: string;
  webhookId: string;
  rawBody: string;
}

export type IngestResult =
  | { status: 200; outcome: 'accepted' | 'ignored' | 'duplicate'; reason?: string; messages?: number }
  | { status: 400; outcome: 'bad_request'; reason: string };

export interface IngestDeps {
  db: Db;
  logger: Logger;
  metrics: Metrics;
  gdpr: GdprUseCases;
  now?: () => Date;
  /** Tells the worker a shop has new due work (in-process wake-up). */
  onEnqueued?: (shopId: string) => void;
  /** bulk_operations/finish: tells the historical import its bulk operation is done. */
  onBulkOperationFinish?: (shopDomain: string, payload: unknown) => Promise<boolean>;
}

const GDPR_TOPICS = new Set(['customers/redact', 'customers/data_request', 'shop/redact', 'app/uninstalled']);

export function isUniqueViolation(err: unknown): boolean {
  return err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002';
}

export function createIngestWebhook(deps: IngestDeps) {
  const now = deps.now ?? (() => new Date());
  const { db } = deps;

  async function recordIgnored(input: IngestInput, topic: string, reason: string): Promise<IngestResult> {
    try {
      await db.webhookReceipt.create({ data: { webhookId: input.webhookId, shopDomain: input.shopDomain, topic, outcome: 'ignored', reason, receivedAt: now() } });
    } catch (err) {
      if (isUniqueViolation(err)) return { status: 200, outcome: 'duplicate' };
      throw err;
    }
    return { status: 200, outcome: 'ignored', reason };
  }

  async function forward(input: IngestInput, topic: string, payload: unknown): Promise<IngestResult> {
    const shop = await db.shop.findUnique({ where: { domain: input.shopDomain }, include: { connection: true, settings: true } });
    if (!shop || !shop.connection) return recordIgnored(input, topic, 'shop not connected');
    if (shop.uninstalledAt) return recordIgnored(input, topic, 'app uninstalled');
    const receivedAt = now();
    const { customerId, orderId } = lookupKeys(topic, payload);
    const digest = customerId ? await db.customerDigest.findUnique({ where: { shopId_customerId: { shopId: shop.id, customerId } } }) : null;
    let orderEmail: string | null = null;
    if (orderId) {
      const prior = await db.outboxMessage.findFirst({ where: { shopId: shop.id, orderId, email: { not: null } }, orderBy: { id: 'desc' }, select: { email: true } });
      orderEmail = prior?.email ?? null;
    }
    const out: MapOutput = mapWebhook({
      topic,
      payload,
      webhookId: input.webhookId,
      shopDomain: input.shopDomain,
      receivedAt,
      settings: parseStoredSettings(shop.settings?.data),
      customerState: customerId ? (digest ? { digest: digest.digest, consentState: digest.consentState } : null) : undefined,
      orderEmail,
    });
    const deliverable = shop.connection.status === 'connected';
    const settings = parseStoredSettings(shop.settings?.data);
    const opts = { shopId: shop.id, status: deliverable ? ('queued' as const) : ('held' as const), heldReason: deliverable ? null : 'invalid_key' };

    const stored = await db.$transaction(async (tx) => {
      await tx.webhookReceipt.create({
        data: {
          webhookId: input.webhookId,
          shopDomain: input.shopDomain,
          topic,
          outcome: out.ignored ? 'ignored' : 'accepted',
          reason: out.ignored ?? null,
          customerId: out.customerId,
          receivedAt,
        },
      });
      if (out.cancelAbandoned) await cancelAbandoned(tx, shop.id, out.cancelAbandoned);
      let count = await insertNew(tx, out.messages, opts);
      for (const m of out.upserts) {
        const existing = await tx.outboxMessage.findUnique({ where: { shopId_sourceId: { shopId: shop.id, sourceId: m.sourceId } } });
        if (!existing) {
          // an order that arrived before this checkout webhook (delivery is unordered) still counts
          const checkoutAt = new Date(m.runAt.getTime() - settings.abandonment_delay_minutes * 60_000);
          const ordered = await orderExistsFor(tx, shop.id, m.checkoutToken, m.email, checkoutAt);
          await tx.outboxMessage.create({
            data: ordered ? { ...toRow(m, opts), status: 'cancelled', lastError: 'the customer placed an order' } : toRow(m, opts),
          });
          count += ordered ? 0 : 1;
        } else if ((existing.status === 'queued' || existing.status === 'held') && m.runAt.getTime() >= existing.dueAt.getTime()) {
          // only newer activity moves the abandonment: a late checkouts/create must not pull it back
          await tx.outboxMessage.update({ where: { id: existing.id }, data: { body: JSON.stringify(m.body), email: m.email, runAt: m.runAt, dueAt: m.runAt } });
        }
      }
      if (out.customerState) {
        const { customerId: cid, digest: d, consentState } = out.customerState;
        await tx.customerDigest.upsert({
          where: { shopId_customerId: { shopId: shop.id, customerId: cid } },
          create: { shopId: shop.id, customerId: cid, digest: d, consentState },
          update: { digest: d, consentState },
        });
      }
      return count;
    });
    if (stored > 0) deps.onEnqueued?.(shop.id);
    return out.ignored ? { status: 200, outcome: 'ignored', reason: out.ignored } : { status: 200, outcome: 'accepted', messages: stored };
  }

  return async function ingestWebhook(input: IngestInput): Promise<IngestResult> {
    const topic = normalizeTopic(input.topic);
    const result = await (async (): Promise<IngestResult> => {
      if (await db.webhookReceipt.findUnique({ where: { webhookId: input.webhookId }, select: { id: true } })) {
        return { status: 200, outcome: 'duplicate' };
      }
      let payload: unknown;
      try {
        payload = parseWebhookBody(input.rawBody);
      } catch (err) {
        if (err instanceof InvalidJsonError) return { status: 400, outcome: 'bad_request', reason: 'the body is not JSON' };
        throw err;
      }
      try {
        if (topic === 'bulk_operations/finish') {
          const matched = (await deps.onBulkOperationFinish?.(input.shopDomain, payload)) ?? false;
          return await recordIgnored(input, topic, matched ? 'bulk operation of an import; the import was told' : 'bulk operation not started by an import');
        }
        if (GDPR_TOPICS.has(topic)) return await deps.gdpr.handle(topic, input, payload);
        return await forward(input, topic, payload);
      } catch (err) {
        // two deliveries of one webhook racing: the receipt's unique key lets exactly one through
        if (isUniqueViolation(err) && (await db.webhookReceipt.count({ where: { webhookId: input.webhookId } }))) {
          return { status: 200, outcome: 'duplicate' };
        }
        throw err;
      }
    })();
    deps.metrics.webhooksReceived.inc({ topic, outcome: result.outcome });
    return result;
  };
}

// One statement per key, each served by its (shopId, key, eventName) index. With an OR of the
// two, SQLite's planner takes (shopId, status, ...) instead and scans the shop's whole queue
// inside the intake's write transaction: at a 100,000-message backlog, 20 webhooks a second.
async function cancelAbandoned(tx: Prisma.TransactionClient, shopId: string, c: { checkoutToken: string | null; email: string | null }): Promise<void> {
  const where = { shopId, eventName: 'checkout_abandoned', status: { in: ['queued', 'held'] } };
  const data = { status: 'cancelled', lastError: 'the customer placed an order' };
  if (c.checkoutToken) await tx.outboxMessage.updateMany({ where: { ...where, checkoutToken: c.checkoutToken }, data });
  if (c.email) await tx.outboxMessage.updateMany({ where: { ...where, email: c.email }, data });
}

async function orderExistsFor(tx: Prisma.TransactionClient, shopId: string, token: string | null, email: string | null, since: Date): Promise<boolean> {
  if (token && (await tx.outboxMessage.count({ where: { shopId, eventName: 'order_placed', checkoutToken: token } })) > 0) return true;
  // an order by the same email since the checkout's last activity means it ended in a purchase
  return email !== null && (await tx.outboxMessage.count({ where: { shopId, eventName: 'order_placed', email, createdAt: { gte: since } } })) > 0;
}
