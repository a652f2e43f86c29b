// back_in_stock and price_dropped: one message per person to tell, about one variant, with what
// Shopify's catalog says of it (never what a browser or a form wrote). Pure.
import { createHash } from 'node:crypto';
import type { Settings } from '../settings/settings';
import { assemble } from './build';
import type { NewMessage } from './types';

/** What the catalog says of the variant, as the event carries it. */
export interface AlertProduct {
  product_id: string;
  variant_id: string | null;
  product_title: string | null;
  variant_title: string | null;
  product_url: string | null;
  image_url: string | null;
  price: number | null;
  currency: string | null;
}

export interface AlertInput {
  shopDomain: string;
  settings: Settings;
  /** The signal's source id (its webhook, with the variant for a drop): with the email, each message's. */
  sourceId: string;
  topic: 'variants/in_stock' | 'products/update';
  occurredAt: Date;
  now: Date;
  product: AlertProduct;
  /** price_dropped: the price before the drop. */
  previousPrice?: number;
}

/** A short, stable digest of an email for a derived source id (no address in it). */
const emailKey = (email: string) => createHash('sha256').update(email).digest('base64url').slice(0, 22);

/** The message for one recipient, or null when the event is turned off. */
export function alertMessage(input: AlertInput, to: { email: string; customerId: string | null }): NewMessage | null {
  const eventName = input.topic === 'variants/in_stock' ? 'back_in_stock' : 'price_dropped';
  const p = input.product;
  const attributes: Record<string, unknown> = {
    product_id: p.product_id,
    variant_id: p.variant_id,
    product_title: p.product_title,
    variant_title: p.variant_title,
    product_url: p.product_url,
    image_url: p.image_url,
    price: p.price,
    currency: p.currency,
  };
  if (eventName === 'price_dropped') attributes.previous_price = input.previousPrice ?? null;
  const out = assemble(
    {
      topic: input.topic,
      payload: null,
      webhookId: input.sourceId,
      shopDomain: input.shopDomain,
      receivedAt: input.now,
      settings: input.settings,
    },
    { email: to.email, noEmail: 'no email', customerId: to.customerId, checkoutToken: null, contact: {} },
    [{ eventName, sourceId: `${input.sourceId}:${emailKey(to.email)}`, occurredAt: input.occurredAt.toISOString(), attributes }],
  );
  return out.messages[0] ?? null;
}
