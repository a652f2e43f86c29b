// The compliance and lifecycle topics, run by stage 2 in arrival order with the shop's other
// receipts: app/uninstalled, shop/redact, customers/redact and customers/data_request. Each is a
// unit alone, and its plan reads and writes in the unit's transaction, with the marking of its
// receipt (processing/commit.ts); a redaction then has the disk compacted (db/erasure.ts), so
// what it erased is not left readable in the database files.
import type { Prisma } from '@prisma/client';
import type { Erasure } from '../../db/erasure';
import type { ReceiptOutcome, ReceiptStore } from '../../intake/receipt-store';
import { describeValue, isEmailAddress } from '../../mapping/email';
import { id, obj } from '../../mapping/read';
import type { Logger } from '../../observability/logger';
import { eraseSubscriptions, exportSubscriptions } from '../../notify-me/subscriptions';
import type { DueEntry } from '../../outbox/due';
import { ConnectionStore } from '../../outbox/connection-store';
import type { EmailKeys } from '../storefront/email-keys';
import { eraseStorefrontData, exportStorefrontData, visitorsOf } from '../storefront/gdpr';
import type { PrismaPlan } from '../plan';
import type { ParsedReceipt } from '../unit';
import { parseProfile, profileEmails, type CustomerProfile } from '../../mapping/profile';
import { customerRef, payloadConcerns, readJson, receiptConcerns, textNamesEmail, withEmails, type CustomerRef } from './gdpr-match';

type Tx = Prisma.TransactionClient;

export interface GdprDeps {
  logger: Logger;
  receipts: ReceiptStore;
  erasure: Erasure;
  now?: () => Date;
  /** app/uninstalled: the storefront pixel stops taking the shop's events. */
  onUninstalled?: (shopId: string) => Promise<void>;
  /** The keys the storefront holds emails by (src/processing/storefront/email-keys.ts). */
  emailKeys: EmailKeys;
}

/**
 * Receipts a redaction never erases unprocessed: the shop's lifecycle, and other erasures (which
 * must still run). Their payloads may hold the customer's email (the shop owner's own address).
 */
const NEVER_ERASED_TOPICS = new Set(['app/uninstalled', 'shop/redact', 'customers/redact']);

/**
 * Every outbox row that holds something of this customer, by exact column values: each message
 * stores the address it is sent to (trimmed, lower-cased) in `email`, and its body holds no other
 * (mapping/build.ts, storefront/shopper-events.ts, the contact delete below).
 */
function customerMessages(shopId: string, ref: CustomerRef): Prisma.OutboxMessageWhereInput {
  const or: Prisma.OutboxMessageWhereInput[] = [];
  if (ref.id) or.push({ customerId: ref.id });
  if (ref.emails.length) or.push({ email: { in: ref.emails } });
  if (ref.orderIds.length) or.push({ orderId: { in: ref.orderIds } });
  return or.length ? { shopId, OR: or } : { id: -1 };
}

/** Stored order and fulfillment state of the customer (by id, email, or the orders named). */
function customerState(
  shopId: string,
  ref: CustomerRef,
): { orders: Prisma.OrderSummaryWhereInput; fulfillments: Prisma.FulfillmentStateWhereInput } {
  const or = <T>(parts: Array<T | false>): T[] => parts.filter((p): p is T => p !== false);
  const orders = or<Prisma.OrderSummaryWhereInput>([
    ref.id !== null && { customerId: ref.id },
    ref.emails.length > 0 && { email: { in: ref.emails } },
    ref.orderIds.length > 0 && { orderId: { in: ref.orderIds } },
  ]);
  const fulfillments = or<Prisma.FulfillmentStateWhereInput>([
    ref.emails.length > 0 && { email: { in: ref.emails } },
    ref.orderIds.length > 0 && { orderId: { in: ref.orderIds } },
  ]);
  // nothing to match on: an empty list matches no row
  return {
    orders: orders.length ? { shopId, OR: orders } : { shopId, orderId: { in: [] } },
    fulfillments: fulfillments.length ? { shopId, OR: fulfillments } : { shopId, fulfillmentId: { in: [] } },
  };
}

/** What a data request shows of a profile: the facts Shopify gave, as they are kept. */
function exportedProfile(p: CustomerProfile): Record<string, unknown> {
  const { sentDigest, ...facts } = p;
  return { ...facts, what: 'what Shopify told this app about the customer, each fact with its time', announced: sentDigest !== null };
}

/** The customer's profiles: by their id, and any other profile holding one of their addresses. */
function customerProfiles(shopId: string, ref: CustomerRef): Prisma.CustomerProfileWhereInput {
  const or: Prisma.CustomerProfileWhereInput[] = [];
  if (ref.id) or.push({ customerId: ref.id });
  if (ref.emails.length) or.push({ email: { in: ref.emails } });
  return or.length ? { shopId, OR: or } : { shopId, customerId: { in: [] } };
}

/**
 * The ref with every address the app knew the customer by: a privacy request names the current
 * address, and the customer's profile keeps the ones they changed from (email_changed).
 */
async function withKnownEmails(tx: Tx, shopId: string, ref: CustomerRef): Promise<{ ref: CustomerRef; profiles: CustomerProfile[] }> {
  const rows = await tx.customerProfile.findMany({ where: customerProfiles(shopId, ref), take: 100 });
  const profiles = rows.map((r) => parseProfile(r.customerId, r.data, r.digest));
  const own = profiles.filter((p) => ref.id !== null && p.customerId === ref.id);
  return { ref: withEmails(ref, own.flatMap(profileEmails)), profiles };
}

export type GdprUseCases = ReturnType<typeof createGdpr>;

export function createGdpr(deps: GdprDeps) {
  const { logger, receipts } = deps;
  const now = deps.now ?? (() => new Date());
  const accepted = (r: ParsedReceipt, customerId: string | null = null): ReceiptOutcome => ({
    id: r.id,
    outcome: 'accepted',
    reason: null,
    messageCount: 0,
    customerId,
  });

  /** Sessions go at once (the token is revoked); merchant data stays until shop/redact. */
  function uninstalled(r: ParsedReceipt): PrismaPlan {
    let shopId: string | null = null;
    return {
      transaction: 'prisma',
      outcomes: [accepted(r)],
      due: [],
      async write(tx) {
        await tx.session.deleteMany({ where: { shop: r.shopDomain } });
        const shop = await tx.shop.findUnique({ where: { domain: r.shopDomain } });
        if (shop) {
          await tx.shop.update({ where: { id: shop.id }, data: { uninstalledAt: now(), tokenStatus: 'revoked', tokenError: null } });
          await tx.outboxMessage.updateMany({
            where: { shopId: shop.id, status: 'queued' },
            data: { status: 'held', heldReason: 'uninstalled' },
          });
        }
        shopId = shop?.id ?? null;
      },
      async committed() {
        if (shopId) await deps.onUninstalled?.(shopId);
        logger.info({ shop: r.shopDomain }, 'app uninstalled: sessions deleted, deliveries held');
      },
    };
  }

  /** Erases everything about the shop, its receipts included (this one too): no row for it remains. */
  function shopRedact(r: ParsedReceipt): PrismaPlan {
    return {
      transaction: 'prisma',
      outcomes: [],
      erased: [{ ...accepted(r), outcome: 'erased' }],
      due: [],
      async write(tx) {
        const shop = await tx.shop.findUnique({ where: { domain: r.shopDomain }, include: { connection: true } });
        await tx.session.deleteMany({ where: { shop: r.shopDomain } });
        await tx.webhookReceipt.deleteMany({ where: { shopDomain: r.shopDomain } });
        if (!shop) return;
        await tx.shop.delete({ where: { id: shop.id } }); // cascades to every shop-owned table
        const ws = shop.connection?.workspaceId;
        if (ws && (await tx.connection.count({ where: { workspaceId: ws } })) === 0) {
          await tx.workspacePacer.deleteMany({ where: { workspaceId: ws } });
        }
      },
      async committed() {
        await deps.erasure.afterRedaction();
        logger.info({ shop: r.shopDomain }, 'shop/redact: every record of the shop erased');
      },
    };
  }

  /**
   * Pending receipts of the shop that concern the customer are erased unprocessed, so no event
   * about them is forwarded later: matched on their parsed bodies by exact email and ids
   * (gdpr-match.ts), and storefront batches also by the customer's devices (`clientIds`).
   */
  async function erasePendingReceipts(
    tx: Tx,
    shopDomain: string,
    ref: CustomerRef,
    clientIds: ReadonlySet<string>,
    except: number,
  ): Promise<number> {
    if (ref.email === null && ref.id === null && ref.orderIds.length === 0 && clientIds.size === 0) return 0;
    const pending = await tx.webhookReceipt.findMany({
      where: { shopDomain, processedAt: null, id: { not: except } },
      select: { id: true, topic: true, kind: true, body: true },
    });
    const hits = pending.filter((p) => !NEVER_ERASED_TOPICS.has(p.topic) && receiptConcerns(p, ref, clientIds));
    const erased: ReceiptOutcome[] = hits.map((h) => ({
      id: h.id,
      outcome: 'erased',
      reason: 'erased by customers/redact before it was processed',
      messageCount: 0,
      customerId: null,
    }));
    return receipts.markProcessed(tx, erased, now());
  }

  /**
   * The shop's exports about the customer: by its id, or by what they hold, read as JSON (a
   * shop has few) and matched exactly (gdpr-match.ts).
   */
  async function eraseExports(tx: Tx, shopId: string, ref: CustomerRef): Promise<number> {
    const rows = await tx.dataExport.findMany({ where: { shopId }, select: { id: true, customerId: true, content: true } });
    const hits = rows
      .filter((e) => (ref.id !== null && e.customerId === ref.id) || payloadConcerns(readJson(e.content), ref))
      .map((e) => e.id);
    if (hits.length === 0) return 0;
    return (await tx.dataExport.deleteMany({ where: { id: { in: hits } } })).count;
  }

  function customersRedact(r: ParsedReceipt): PrismaPlan {
    const named = customerRef(r.payload, 'orders_to_redact');
    const outcome = accepted(r);
    const due: DueEntry[] = [];
    let contactDelete: 'queued' | 'held' | 'invalid_email' | 'none' = 'none';
    return {
      transaction: 'prisma',
      outcomes: [outcome],
      due,
      async write(tx) {
        if (named.id)
          await tx.webhookReceipt.updateMany({ where: { shopDomain: r.shopDomain, customerId: named.id }, data: { customerId: null } });
        const shop = await tx.shop.findUnique({ where: { domain: r.shopDomain }, include: { connection: true } });
        const ref = shop ? (await withKnownEmails(tx, shop.id, named)).ref : named;
        const devices = shop ? (await Promise.all(ref.emails.map((e) => visitorsOf(tx, shop.id, e, deps.emailKeys)))).flat() : [];
        await erasePendingReceipts(tx, r.shopDomain, ref, new Set(devices), r.id);
        if (shop) {
          await tx.outboxMessage.deleteMany({ where: customerMessages(shop.id, ref) }); // attempts cascade
          const state = customerState(shop.id, ref);
          await tx.orderSummary.deleteMany({ where: state.orders });
          await tx.fulfillmentState.deleteMany({ where: state.fulfillments });
          await tx.customerProfile.deleteMany({ where: customerProfiles(shop.id, ref) });
          await eraseExports(tx, shop.id, ref);
          // back-in-stock subscriptions (the storefront's notify-me form), by every address and by customer id
          await eraseSubscriptions(tx, shop.id, { emails: ref.emails, customerId: ref.id });
          for (const email of ref.emails) {
            await eraseStorefrontData(tx, shop.id, email, devices, deps.emailKeys); // storefront visitors, pending identities and trust of the email, and their devices' waiting events
            // a service error naming the address; cleared only if no newer error replaced it meanwhile
            const lastError = shop.connection?.lastError ?? null;
            if (lastError !== null && textNamesEmail(lastError, email)) {
              await ConnectionStore.errorErased(tx, shop.id, lastError);
            }
          }
          // the contact deletes at the service, one per address the customer had; each holds its
          // address only until it is sent
          if (shop.connection) {
            const deliverable = shop.connection.status === 'connected' && !shop.uninstalledAt;
            const at = now();
            const valid = ref.emails.filter(isEmailAddress);
            if (ref.email !== null && !isEmailAddress(ref.email)) contactDelete = 'invalid_email';
            for (const [i, email] of valid.entries()) {
              await tx.outboxMessage.create({
                data: {
                  shopId: shop.id,
                  // the first keeps the id a single delete has always had
                  sourceId: i === 0 ? `redact:${r.webhookId}` : `redact:${r.webhookId}:${i}`,
                  kind: 'contact_delete',
                  topic: r.topic,
                  eventName: 'contact_delete',
                  email,
                  customerId: null,
                  body: '{}',
                  status: deliverable ? 'queued' : 'held',
                  heldReason: deliverable ? null : shop.uninstalledAt ? 'uninstalled' : 'invalid_key',
                  runAt: at,
                  dueAt: at,
                },
              });
            }
            if (valid.length && contactDelete !== 'invalid_email') contactDelete = deliverable ? 'queued' : 'held';
            if (valid.length && deliverable) due.push({ shopId: shop.id, runAt: at });
          }
        }
        if (contactDelete === 'invalid_email') {
          outcome.reason = `the customer's email ${describeValue(named.email!)} is not a valid address: no contact delete was sent for it (the service would refuse it); our copies were erased`;
        }
      },
      async committed() {
        await deps.erasure.afterRedaction();
        logger.info({ shop: r.shopDomain, contactDelete }, 'customers/redact: local records erased');
      },
    };
  }

  function dataRequest(r: ParsedReceipt): PrismaPlan {
    const named = customerRef(r.payload, 'orders_requested');
    const requestId = id(obj(obj(r.payload)?.data_request)?.id) ?? r.webhookId;
    const outcome = accepted(r);
    let exportId: number | null = null;
    return {
      transaction: 'prisma',
      outcomes: [outcome],
      due: [],
      async write(tx) {
        const shop = await tx.shop.findUnique({ where: { domain: r.shopDomain } });
        if (!shop) {
          Object.assign(outcome, { outcome: 'ignored', reason: 'unknown shop' });
          return;
        }
        const { ref, profiles } = await withKnownEmails(tx, shop.id, named);
        const messages = await tx.outboxMessage.findMany({ where: customerMessages(shop.id, ref), orderBy: { id: 'asc' }, take: 10_000 });
        const state = customerState(shop.id, ref);
        const [orders, fulfillments] = await Promise.all([
          tx.orderSummary.findMany({ where: state.orders, take: 10_000 }),
          tx.fulfillmentState.findMany({ where: state.fulfillments, take: 10_000 }),
        ]);
        const content = {
          request_id: requestId,
          shop_domain: shop.domain,
          customer: { id: ref.id, email: ref.email, known_emails: ref.emails },
          generated_at: now().toISOString(),
          summary:
            'Events this app forwarded (or will forward) to the email service about this customer, and the order and shipping details it keeps to build them. The email service holds the contact itself.',
          events: messages.map((m) => ({
            event_name: m.eventName,
            topic: m.topic,
            status: m.status,
            created_at: m.createdAt.toISOString(),
            delivered_at: m.deliveredAt?.toISOString() ?? null,
            sent: JSON.parse(m.body) as unknown,
          })),
          orders: orders.map((o) => JSON.parse(o.summary) as unknown),
          shipments: fulfillments.map((f) => JSON.parse(f.state) as unknown),
          profile: profiles.map(exportedProfile),
          storefront: await exportStorefrontData(tx, shop.id, ref.emails, deps.emailKeys),
          back_in_stock: await exportSubscriptions(tx, shop.id, { emails: ref.emails, customerId: ref.id }),
        };
        const row = await tx.dataExport.upsert({
          where: { shopId_requestId: { shopId: shop.id, requestId } },
          create: { shopId: shop.id, requestId, customerId: ref.id, content: JSON.stringify(content) },
          update: { content: JSON.stringify(content) },
        });
        exportId = row.id;
      },
      async committed() {
        if (exportId !== null)
          logger.info(
            { shop: r.shopDomain, requestId, exportId, location: `/api/data-requests/${exportId}` },
            'customers/data_request answered: export ready',
          );
      },
    };
  }

  return {
    /** The receipt's plan: nothing is read or written until the unit's transaction runs its write. */
    async handle(r: ParsedReceipt): Promise<PrismaPlan> {
      switch (r.topic) {
        case 'app/uninstalled':
          return uninstalled(r);
        case 'shop/redact':
          return shopRedact(r);
        case 'customers/redact':
          return customersRedact(r);
        default:
          return dataRequest(r);
      }
    },
  };
}
