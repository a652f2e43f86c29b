// The storefront's part of customers/redact and customers/data_request, run inside their
// transactions (src/processing/privacy/gdpr.ts), matching the email exactly: the client ids tied
// to it (PixelVisitor.email) and any events of those client ids still waiting; the pending
// identities that gave it and the events their client ids keep waiting; and its trust row
// (vouched or unknown, with its daily counts). Pending identities and trust rows hold the email
// only as its keys (email-keys.ts): every key it may have been written with is looked for. Outbox
// messages (viewed_product, the abandonments) carry the email and go with the customer's other
// messages. shop/redact: the Shop cascade.
import type { Prisma } from '@prisma/client';
import { normalizeEmail } from '../../mapping/email';
import type { EmailKeys } from './email-keys';

type Tx = Prisma.TransactionClient;

/**
 * The client ids (devices) of `email`, matched exactly: those tied to it (PixelVisitor.email, always
 * normalised) and those that gave it and wait for Shopify to confirm it (their pending identities, by its keys).
 */
export async function visitorsOf(tx: Tx, shopId: string, rawEmail: string, keys: EmailKeys): Promise<string[]> {
  const email = normalizeEmail(rawEmail);
  const [visitors, pending] = await Promise.all([
    tx.pixelVisitor.findMany({ where: { shopId, email }, select: { clientId: true } }),
    tx.pixelClaim.findMany({ where: { shopId, emailKey: { in: keys.all(shopId, email) } }, select: { clientId: true } }),
  ]);
  return [...new Set([...visitors, ...pending].map((v) => v.clientId))];
}

/**
 * Erases what the storefront keeps about `email`: the waiting events of its devices (`clientIds`,
 * from visitorsOf), the identities tied to it, its pending identities, its trust row and its product interests. Returns how many
 * devices.
 */
export async function eraseStorefrontData(tx: Tx, shopId: string, rawEmail: string, clientIds: string[], keys: EmailKeys): Promise<number> {
  const email = normalizeEmail(rawEmail);
  const emailKeys = keys.all(shopId, email);
  if (clientIds.length) await tx.pixelEvent.deleteMany({ where: { shopId, clientId: { in: clientIds } } });
  await tx.pixelVisitor.deleteMany({ where: { shopId, email } });
  await tx.pixelClaim.deleteMany({ where: { shopId, emailKey: { in: emailKeys } } });
  await tx.pixelShopper.deleteMany({ where: { shopId, emailKey: { in: emailKeys } } });
  await tx.productInterest.deleteMany({ where: { shopId, email } });
  return clientIds.length;
}

/** What the storefront keeps about the customer's addresses, for the export. */
export async function exportStorefrontData(tx: Tx, shopId: string, rawEmails: readonly string[], keys: EmailKeys) {
  const emails = [...new Set(rawEmails.map(normalizeEmail))];
  const emailKeys = emails.flatMap((e) => keys.all(shopId, e));
  const [visitors, pending, trust] = emails.length
    ? await Promise.all([
        tx.pixelVisitor.findMany({ where: { shopId, email: { in: emails } }, orderBy: { identifiedAt: 'asc' }, take: 1000 }),
        tx.pixelClaim.findMany({ where: { shopId, emailKey: { in: emailKeys } }, orderBy: { claimedAt: 'asc' }, take: 1000 }),
        tx.pixelShopper.findMany({ where: { shopId, emailKey: { in: emailKeys } } }),
      ])
    : [[], [], []];
  const clientIds = [...new Set([...visitors, ...pending].map((v) => v.clientId))];
  const waiting = clientIds.length
    ? await tx.pixelEvent.findMany({ where: { shopId, clientId: { in: clientIds } }, orderBy: { id: 'asc' }, take: 10_000 })
    : [];
  const interests = emails.length
    ? await tx.productInterest.findMany({ where: { shopId, email: { in: emails } }, orderBy: { variantId: 'asc' }, take: 10_000 })
    : [];
  return {
    summary:
      'Storefront visitors (Shopify client ids) tied to this email by the web pixel, visitors that gave this email and wait for Shopify to confirm it, their events still waiting to be counted (for an email, or for Shopify to describe their product), whether Shopify confirmed the email for the shop (with its counts of the day), and the products viewed or added to the cart, for back-in-stock and price-drop emails.',
    visitors: visitors.map((v) => ({
      client_id: v.clientId,
      identified_at: v.identifiedAt.toISOString(),
      kept_until: v.expiresAt.toISOString(),
    })),
    // `claims`: the export's field name for the pending identities, kept as merchants have it
    claims: pending.map((c) => ({ client_id: c.clientId, claimed_at: c.claimedAt.toISOString(), kept_until: c.expiresAt.toISOString() })),
    confirmed: trust.map((t) => ({
      state: t.state,
      source: t.source,
      checked_at: t.checkedAt.toISOString(),
      kept_until: t.expiresAt.toISOString(),
      day: new Date(t.quotaDay * 86_400_000).toISOString().slice(0, 10),
      events_that_day: t.events,
      abandonments_that_day: t.abandonments,
    })),
    waiting_events: waiting.map((e) => ({
      client_id: e.clientId,
      name: e.name,
      waiting_for: e.waitsFor,
      occurred_at: e.occurredAt.toISOString(),
      kept_until: e.expiresAt.toISOString(),
      data: JSON.parse(e.data) as unknown,
    })),
    product_interests: interests.map((i) => ({
      product_id: i.productId,
      variant_id: i.variantId,
      viewed_at: i.viewedAt?.toISOString() ?? null,
      added_to_cart_at: i.cartedAt?.toISOString() ?? null,
      seen_sold_out_at: i.soldOutAt?.toISOString() ?? null,
      bought_at: i.boughtAt?.toISOString() ?? null,
      back_in_stock_sent_at: i.restockSentAt?.toISOString() ?? null,
      price_drop_sent_at: i.dropSentAt?.toISOString() ?? null,
      kept_until: i.expiresAt.toISOString(),
    })),
  };
}
