// The storefront's part of customers/redact and customers/data_request, run inside their
// transactions (src/use-cases/gdpr.ts): the client ids tied to the customer's email, and any
// events of those client ids still waiting. Outbox messages (viewed_product, the abandonments)
// carry the email and go with the customer's other messages. shop/redact: the Shop cascade.
import type { Prisma } from '@prisma/client';

type Tx = Prisma.TransactionClient;

/** The client ids (devices) tied to `email`, matched exactly: every stored email is normalised (pixel/wire.ts). */
export async function visitorsOf(tx: Tx, shopId: string, email: string): Promise<string[]> {
  const visitors = await tx.pixelVisitor.findMany({ where: { shopId, email }, select: { clientId: true } });
  return visitors.map((v) => v.clientId);
}

/** Erases the visitors of these client ids (visitorsOf) and their waiting events; returns how many visitors. */
export async function erasePixelData(tx: Tx, shopId: string, clientIds: string[]): Promise<number> {
  if (clientIds.length === 0) return 0;
  await tx.pixelEvent.deleteMany({ where: { shopId, clientId: { in: clientIds } } });
  return (await tx.pixelVisitor.deleteMany({ where: { shopId, clientId: { in: clientIds } } })).count;
}

/** What the storefront pixel keeps about `email`, for the export. */
export async function exportPixelData(tx: Tx, shopId: string, email: string | null) {
  const visitors = email ? await tx.pixelVisitor.findMany({ where: { shopId, email }, orderBy: { identifiedAt: 'asc' }, take: 1000 }) : [];
  const waiting = visitors.length
    ? await tx.pixelEvent.findMany({ where: { shopId, clientId: { in: visitors.map((v) => v.clientId) } }, orderBy: { id: 'asc' }, take: 10_000 })
    : [];
  return {
    summary: 'Storefront visitors (Shopify client ids) tied to this email by the web pixel, and their events still waiting to be counted.',
    visitors: visitors.map((v) => ({ client_id: v.clientId, identified_at: v.identifiedAt.toISOString(), kept_until: v.expiresAt.toISOString() })),
    waiting_events: waiting.map((e) => ({
      client_id: e.clientId, name: e.name, occurred_at: e.occurredAt.toISOString(), kept_until: e.expiresAt.toISOString(), data: JSON.parse(e.data) as unknown,
    })),
  };
}
