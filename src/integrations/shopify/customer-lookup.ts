// Whether emails belong to customers of a shop, from the Admin API (read_customers, granted at
// install): one `customers(query:)` call for up to MAX_EMAILS_PER_CALL emails, each compared
// exactly with the addresses Shopify returns (its search may match more loosely). The emails come
// from storefront visitors, so the calls are bounded: at most `perMinute` per shop in this process,
// within the caller's deadline. Caching the answers (found and not found) is the caller's.
import type { Session } from '@shopify/shopify-api';
import { normalizeEmail } from '../../mapping/email';
import type { Logger } from '../../observability/logger';
import { TokenBuckets } from '../../lib/rate-limit';
import type { ShopifyApi } from './api';
import { adminRequest, ThrottleTracker } from './admin-graphql';
import { beforeDeadline, lookupSession, unanswered } from './admin-lookup';
import type { OfflineTokens } from './tokens';

export const MAX_EMAILS_PER_CALL = 25;

export const CUSTOMERS_BY_EMAIL_QUERY = `#graphql
  query CustomersByEmail($query: String!, $first: Int!) {
    customers(first: $first, query: $query) { nodes { email } }
  }`;

export type CustomerLookupOutcome = 'answered' | 'none' | 'no_scope' | 'no_session' | 'over_budget' | 'timeout' | 'throttled' | 'failed';

export interface CustomerLookupResult {
  /** Emails Shopify has a customer for. */
  found: Set<string>;
  /** Emails Shopify answered it has no customer for. */
  notFound: Set<string>;
  /** Emails not asked, or not answered (budget, deadline, failure): nothing is known of them. */
  unresolved: Set<string>;
  outcome: CustomerLookupOutcome;
  apiCalls: number;
}

export interface CustomerLookup {
  /** `emails` normalised; `deadline` epoch ms (Date.now) to answer by. Never throws. */
  find(shop: { id: string; domain: string }, emails: readonly string[], deadline: number): Promise<CustomerLookupResult>;
}

export interface CustomerLookupDeps {
  shopify: ShopifyApi;
  tokens: Pick<OfflineTokens, 'getOfflineSession'>;
  logger: Logger;
  /** Calls per shop and minute, in this process (0: never ask). */
  perMinute: number;
}

/** A search term matching one email exactly as a phrase (quotes and backslashes escaped). */
export const emailTerm = (email: string) => `email:"${email.replace(/["\\]/g, (c) => `\\${c}`)}"`;

interface Data {
  customers?: { nodes?: Array<{ email?: unknown } | null> | null } | null;
}

export function createCustomerLookup(deps: CustomerLookupDeps): CustomerLookup {
  const logger = deps.logger.child({ component: 'customer-lookup' });
  const budget = new TokenBuckets({ rate: Math.max(deps.perMinute, 1e-9) / 60, burst: Math.max(1, deps.perMinute), maxKeys: 50_000 });
  const throttle = new ThrottleTracker();

  async function ask(session: Session, emails: string[], deadline: number, signal: AbortSignal): Promise<Set<string>> {
    const wanted = new Set(emails);
    const res = await adminRequest<Data>(deps.shopify, session, CUSTOMERS_BY_EMAIL_QUERY, {
      variables: { query: emails.map(emailTerm).join(' OR '), first: Math.min(250, emails.length * 2) },
      signal,
      deadline,
      throttle,
      expectedCost: 2 + emails.length * 2,
    });
    const found = new Set<string>();
    for (const node of res.data?.customers?.nodes ?? []) {
      const email = typeof node?.email === 'string' ? normalizeEmail(node.email) : null;
      if (email && wanted.has(email)) found.add(email);
    }
    return found;
  }

  return {
    async find(shop, input, deadline) {
      const emails = [...new Set(input)];
      const result: CustomerLookupResult = {
        found: new Set(),
        notFound: new Set(),
        unresolved: new Set(emails),
        outcome: 'none',
        apiCalls: 0,
      };
      if (emails.length === 0) return result;
      if (deps.perMinute <= 0) return { ...result, outcome: 'over_budget' };
      const session = await lookupSession(deps.tokens, shop.domain, ['read_customers']);
      if (typeof session === 'string') return { ...result, outcome: session };
      try {
        await beforeDeadline(deadline, async (signal) => {
          for (let i = 0; i < emails.length; i += MAX_EMAILS_PER_CALL) {
            if (!budget.take(shop.id)) {
              result.outcome = result.apiCalls ? 'answered' : 'over_budget';
              return;
            }
            const chunk = emails.slice(i, i + MAX_EMAILS_PER_CALL);
            const found = await ask(session, chunk, deadline, signal);
            result.apiCalls += 1;
            for (const e of chunk) {
              result.unresolved.delete(e);
              (found.has(e) ? result.found : result.notFound).add(e);
            }
          }
          result.outcome = 'answered';
        });
        return result;
      } catch (err) {
        const { reason: outcome, failure } = unanswered(err);
        logger.warn({ shop: shop.domain, outcome, failure }, 'customer lookup unanswered; the storefront identities stay pending');
        return { ...result, outcome };
      }
    },
  };
}
