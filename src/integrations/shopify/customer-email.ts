// A customer's email by their id, from the Admin API (read_customers, granted at install): one
// `customer(id:)` call reading `defaultEmailAddress` (the `email` field is deprecated since
// 2025-01). For the storefront's notify-me form, where Shopify signs the logged-in customer's id
// but not their email.
import { normalizeEmail } from '../../mapping/email';
import type { Logger } from '../../observability/logger';
import type { ShopifyApi } from './api';
import { adminRequest, ThrottleTracker } from './admin-graphql';
import { lookUp, type LookupUnanswered } from './admin-lookup';
import type { OfflineTokens } from './tokens';

/** `gid://shopify/<type>/123` → `123` (exact: never through a JS number); null when it is not one. */
const idOf = (gid: unknown, type: string): string | null => {
  const m = typeof gid === 'string' ? /^gid:\/\/shopify\/([A-Za-z]+)\/(\d+)$/.exec(gid) : null;
  return m && m[1] === type ? m[2]! : null;
};

export const CUSTOMER_EMAIL_QUERY = `#graphql
  query CustomerEmail($id: ID!) {
    customer(id: $id) { id defaultEmailAddress { emailAddress } }
  }`;

export type CustomerEmailUnavailable = LookupUnanswered;

export type CustomerEmailResult =
  /** The customer's email, trimmed and lower-cased. */
  | { kind: 'found'; email: string }
  /** Shopify knows the customer, who has no email address (a phone-only account). */
  | { kind: 'no_email' }
  /** Shopify has no such customer in this shop. */
  | { kind: 'unknown' }
  | { kind: 'unavailable'; reason: CustomerEmailUnavailable };

export interface CustomerEmailLookup {
  /** `customerId` numeric; `deadline` epoch ms (Date.now). Never throws. */
  emailOf(shop: { id: string; domain: string }, customerId: string, deadline: number): Promise<CustomerEmailResult>;
}

export interface CustomerEmailDeps {
  shopify: ShopifyApi;
  tokens: Pick<OfflineTokens, 'getOfflineSession'>;
  logger: Logger;
  /** Takes one of the shop's Admin API calls for storefront requests; false: none left now (over_budget). */
  budget?: (shopId: string) => boolean;
}

interface Data {
  customer?: { id?: unknown; defaultEmailAddress?: { emailAddress?: unknown } | null } | null;
}

/** The answer to CUSTOMER_EMAIL_QUERY for `customerId`. */
export function parseCustomerEmail(customerId: string, data: Data | undefined): CustomerEmailResult {
  const c = data?.customer;
  if (!c || idOf(c.id, 'Customer') !== customerId) return { kind: 'unknown' };
  const email = c.defaultEmailAddress?.emailAddress;
  return typeof email === 'string' && email.trim() !== '' ? { kind: 'found', email: normalizeEmail(email) } : { kind: 'no_email' };
}

export function createCustomerEmailLookup(deps: CustomerEmailDeps): CustomerEmailLookup {
  const logger = deps.logger.child({ component: 'customer-email' });
  const throttle = new ThrottleTracker();
  return {
    async emailOf(shop, customerId, deadline) {
      const res = await lookUp(
        { ...deps, logger },
        shop,
        ['read_customers'],
        deadline,
        "customer email lookup unanswered; the logged-in customer's notify-me request is refused for now",
        (session, signal) =>
          adminRequest<Data>(deps.shopify, session, CUSTOMER_EMAIL_QUERY, {
            variables: { id: `gid://shopify/Customer/${customerId}` },
            signal,
            deadline,
            throttle,
            expectedCost: 2,
          }),
      );
      return res.ok ? parseCustomerEmail(customerId, res.value.data) : { kind: 'unavailable', reason: res.reason };
    },
  };
}
