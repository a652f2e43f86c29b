// The email of a logged-in customer, whom the app proxy names by a signed id only: what the app
// keeps about the customer from Shopify's own webhooks first, when it keeps anything, else one
// Admin API call. Never the email the browser sent: that is the shopper's claim.
import type { Db } from '../db/client';
import type { CustomerEmailLookup, CustomerEmailResult } from '../integrations/shopify/customer-email';
import { isEmailAddress, normalizeEmail } from '../mapping/email';

export type { CustomerEmailResult } from '../integrations/shopify/customer-email';

/**
 * What the app itself keeps as a customer's email, from what Shopify told it (a customer profile
 * kept from customers/* webhooks): null when it keeps nothing for this id, and Shopify is asked.
 */
export type StoredCustomerEmail = (shopId: string, customerId: string) => Promise<string | null>;

/** The current address of the customer's profile (kept from Shopify's customers/* and order webhooks), if the app has one. */
export const profileEmail =
  (db: Db): StoredCustomerEmail =>
  async (shopId, customerId) =>
    (await db.customerProfile.findUnique({ where: { shopId_customerId: { shopId, customerId } }, select: { email: true } }))?.email ?? null;

export interface CustomerEmails {
  /** `deadline` epoch ms (Date.now). Never throws. */
  emailOf(shop: { id: string; domain: string }, customerId: string, deadline: number): Promise<CustomerEmailResult>;
}

export function customerEmails(shopify: CustomerEmailLookup, stored?: StoredCustomerEmail): CustomerEmails {
  return {
    async emailOf(shop, customerId, deadline) {
      if (stored) {
        // a store that fails, or keeps an address the service would refuse, leaves the answer to Shopify
        const kept = await stored(shop.id, customerId).catch(() => null);
        const email = kept === null ? null : normalizeEmail(kept);
        if (email !== null && isEmailAddress(email)) return { kind: 'found', email };
      }
      return shopify.emailOf(shop, customerId, deadline);
    },
  };
}
