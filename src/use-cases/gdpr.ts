// The compliance and lifecycle topics: app/uninstalled, shop/redact, customers/redact and
// customers/data_request. Each runs in one transaction with its receipt.
import type { Prisma } from '@prisma/client';
import type { Db } from '../db/client';
import type { Logger } from '../observability/logger';
import type { OutboxRepository } from '../outbox/repository';
import type { IngestInput, IngestResult } from './ingest-webhook';

type Tx = Prisma.TransactionClient;

export interface GdprDeps {
  db: Db;
  logger: Logger;
  repo: OutboxRepository;
  now?: () => Date;
  onEnqueued?: (shopId: string) => void;
}

const str = (v: unknown): string | null => (v === null || v === undefined || v === '' ? null : String(v));

interface CustomerRef {
  id: string | null;
  email: string | null;
  orderIds: string[];
}

function customerRef(payload: unknown, ordersKey: 'orders_to_redact' | 'orders_requested'): CustomerRef {
  const p = (payload ?? {}) as Record<string, unknown>;
  const c = (p.customer ?? {}) as Record<string, unknown>;
  const orders = Array.isArray(p[ordersKey]) ? (p[ordersKey] as unknown[]).map((o) => String(o)) : [];
  return { id: str(c.id), email: str(c.email)?.toLowerCase() ?? null, orderIds: orders };
}

/** Every outbox row that holds something of this customer. */
function customerMessages(shopId: string, ref: CustomerRef): Prisma.OutboxMessageWhereInput {
  const or: Prisma.OutboxMessageWhereInput[] = [];
  if (ref.id) or.push({ customerId: ref.id });
  if (ref.email) or.push({ email: { equals: ref.email } }, { body: { contains: ref.email } });
  if (ref.orderIds.length) or.push({ orderId: { in: ref.orderIds } });
  return or.length ? { shopId, OR: or } : { id: -1 };
}

export type GdprUseCases = ReturnType<typeof createGdpr>;

export function createGdpr(deps: GdprDeps) {
  const { db, logger } = deps;
  const now = deps.now ?? (() => new Date());

  const receipt = (tx: Tx, input: IngestInput, topic: string, outcome: 'accepted' | 'ignored', reason?: string) =>
    tx.webhookReceipt.create({ data: { webhookId: input.webhookId, shopDomain: input.shopDomain, topic, outcome, reason: reason ?? null, receivedAt: now() } });

  /** Sessions go at once (the token is revoked); merchant data stays until shop/redact. */
  async function uninstalled(input: IngestInput, topic: string): Promise<IngestResult> {
    await db.$transaction(async (tx) => {
      await receipt(tx, input, topic, 'accepted');
      await tx.session.deleteMany({ where: { shop: input.shopDomain } });
      const shop = await tx.shop.findUnique({ where: { domain: input.shopDomain } });
      if (shop) {
        await tx.shop.update({ where: { id: shop.id }, data: { uninstalledAt: now(), tokenStatus: 'revoked', tokenError: null } });
        await tx.outboxMessage.updateMany({ where: { shopId: shop.id, status: 'queued' }, data: { status: 'held', heldReason: 'uninstalled' } });
      }
    });
    logger.info({ shop: input.shopDomain }, 'app uninstalled: sessions deleted, deliveries held');
    return { status: 200, outcome: 'accepted' };
  }

  /** Erases everything about the shop, its own receipts included: no row for it remains. */
  async function eraseShop(domain: string): Promise<void> {
    await db.$transaction(async (tx) => {
      const shop = await tx.shop.findUnique({ where: { domain }, include: { connection: true } });
      await tx.session.deleteMany({ where: { shop: domain } });
      await tx.webhookReceipt.deleteMany({ where: { shopDomain: domain } });
      if (!shop) return;
      await tx.shop.delete({ where: { id: shop.id } }); // cascades to every shop-owned table
      const ws = shop.connection?.workspaceId;
      if (ws && (await tx.connection.count({ where: { workspaceId: ws } })) === 0) {
        await tx.workspacePacer.deleteMany({ where: { workspaceId: ws } });
      }
    });
  }

  async function shopRedact(input: IngestInput): Promise<IngestResult> {
    await eraseShop(input.shopDomain);
    logger.info({ shop: input.shopDomain }, 'shop/redact: every record of the shop erased');
    return { status: 200, outcome: 'accepted' };
  }

  async function customersRedact(input: IngestInput, topic: string, payload: unknown): Promise<IngestResult> {
    const ref = customerRef(payload, 'orders_to_redact');
    let queuedDelete = false;
    let shopId: string | null = null;
    await db.$transaction(async (tx) => {
      await receipt(tx, input, topic, 'accepted');
      if (ref.id) await tx.webhookReceipt.updateMany({ where: { shopDomain: input.shopDomain, customerId: ref.id }, data: { customerId: null } });
      const shop = await tx.shop.findUnique({ where: { domain: input.shopDomain }, include: { connection: true } });
      if (!shop) return;
      shopId = shop.id;
      await tx.outboxMessage.deleteMany({ where: customerMessages(shop.id, ref) }); // attempts cascade
      if (ref.id) {
        await tx.customerDigest.deleteMany({ where: { shopId: shop.id, customerId: ref.id } });
        await tx.dataExport.deleteMany({ where: { shopId: shop.id, customerId: ref.id } });
      }
      if (ref.email) {
        await tx.dataExport.deleteMany({ where: { shopId: shop.id, content: { contains: ref.email } } });
        await tx.connection.updateMany({ where: { shopId: shop.id, lastError: { contains: ref.email } }, data: { lastError: null } });
      }
      // the contact delete at the service; it holds the address only until it is sent
      if (ref.email && shop.connection) {
        const deliverable = shop.connection.status === 'connected' && !shop.uninstalledAt;
        const at = now();
        await tx.outboxMessage.create({
          data: {
            shopId: shop.id, sourceId: `redact:${input.webhookId}`, kind: 'contact_delete', topic, eventName: 'contact_delete',
            email: ref.email, customerId: null, body: '{}', status: deliverable ? 'queued' : 'held',
            heldReason: deliverable ? null : shop.uninstalledAt ? 'uninstalled' : 'invalid_key', runAt: at, dueAt: at,
          },
        });
        queuedDelete = true;
      }
    });
    if (queuedDelete && shopId) deps.onEnqueued?.(shopId);
    logger.info({ shop: input.shopDomain, contactDelete: queuedDelete }, 'customers/redact: local records erased');
    return { status: 200, outcome: 'accepted' };
  }

  async function dataRequest(input: IngestInput, topic: string, payload: unknown): Promise<IngestResult> {
    const ref = customerRef(payload, 'orders_requested');
    const requestId = str(((payload ?? {}) as { data_request?: { id?: unknown } }).data_request?.id) ?? input.webhookId;
    const shop = await db.shop.findUnique({ where: { domain: input.shopDomain } });
    if (!shop) {
      await db.$transaction((tx) => receipt(tx, input, topic, 'ignored', 'unknown shop'));
      return { status: 200, outcome: 'ignored', reason: 'unknown shop' };
    }
    const exportId = await db.$transaction(async (tx) => {
      await receipt(tx, input, topic, 'accepted');
      const messages = await tx.outboxMessage.findMany({ where: customerMessages(shop.id, ref), orderBy: { id: 'asc' }, take: 10_000 });
      const digest = ref.id ? await tx.customerDigest.findUnique({ where: { shopId_customerId: { shopId: shop.id, customerId: ref.id } } }) : null;
      const content = {
        request_id: requestId,
        shop_domain: shop.domain,
        customer: { id: ref.id, email: ref.email },
        generated_at: now().toISOString(),
        summary: 'Events this app forwarded (or will forward) to the email service about this customer. The app keeps no other copy of customer data; the email service holds the contact itself.',
        events: messages.map((m) => ({
          event_name: m.eventName, topic: m.topic, status: m.status, created_at: m.createdAt.toISOString(),
          delivered_at: m.deliveredAt?.toISOString() ?? null, sent: JSON.parse(m.body) as unknown,
        })),
        customer_digest_kept: Boolean(digest),
      };
      const row = await tx.dataExport.upsert({
        where: { shopId_requestId: { shopId: shop.id, requestId } },
        create: { shopId: shop.id, requestId, customerId: ref.id, content: JSON.stringify(content) },
        update: { content: JSON.stringify(content) },
      });
      return row.id;
    });
    logger.info({ shop: shop.domain, requestId, exportId, location: `/api/data-requests/${exportId}` }, 'customers/data_request answered: export ready');
    return { status: 200, outcome: 'accepted' };
  }

  return {
    eraseShop,
    async handle(topic: string, input: IngestInput, payload: unknown): Promise<IngestResult> {
      switch (topic) {
        case 'app/uninstalled':
          return uninstalled(input, topic);
        case 'shop/redact':
          return shopRedact(input);
        case 'customers/redact':
          return customersRedact(input, topic, payload);
        default:
          return dataRequest(input, topic, payload);
      }
    },
  };
}
