// The storefront's "notify me when available" form, past the app proxy's signature check
// (src/http/proxy.route.ts): who is asking, for which variant, and within which limits, then one
// subscription per shop, variant and email (subscriptions.ts).
// - The shopper: a logged-in customer is the one Shopify's signed `logged_in_customer_id` names,
//   with the email the app keeps for them or Shopify's (customer-emails.ts); the body's email is
//   never theirs to choose. A guest's typed email must be an address the email service takes.
// - The variant: Shopify's catalog must have it (the browser only names an id). One still for sale
//   needs no alert: nothing is stored, and the shopper is told.
// - Limits (in this process): per client address first, then per customer and per email, before
//   any Admin API call; the lookups also share a per-shop budget.
// - Nothing is stored unless every check passed; asking again renews the one row (idempotent).
// The result is this use case's own; the route maps it to HTTP.
import type { Db } from '../db/client';
import type { VariantLookup } from '../integrations/shopify/variant-lookup';
import { TokenBuckets } from '../lib/rate-limit';
import type { Logger } from '../observability/logger';
import { guestEmail, parseNotifyBody } from './body';
import type { CustomerEmails } from './customer-emails';
import { subscribe } from './subscriptions';

/** How long a subscription is kept after its latest subscribe, in days. */
export const NOTIFY_ME_KEEP_DAYS = 90;
/** Requests per shopper address and minute, and per email (and customer) and hour, per web process. */
export const NOTIFY_ME_PER_IP_MINUTE = 10;
export const NOTIFY_ME_PER_EMAIL_HOUR = 10;

export type NotifyMeRefusal =
  /** No variant id (digits, or a ProductVariant gid) in the body. */
  | 'invalid_request'
  /** A guest sent no email. */
  | 'email_required'
  /** A guest's email is not an address the email service takes. */
  | 'invalid_email'
  /** The logged-in customer has no email address at Shopify (or Shopify does not know them). */
  | 'no_email'
  /** Shopify's catalog has no such variant in this shop. */
  | 'unknown_variant'
  /** Over the limit per client address, customer or email. */
  | 'rate_limited'
  /** Shopify or the database could not answer now: nothing was stored; trying again later may work. */
  | 'unavailable'
  /** The shop cannot take alerts (not installed, or without read_products for the catalog check). */
  | 'not_available';

export type NotifyMeResult =
  | { kind: 'subscribed'; created: boolean; variantId: string; productId: string; expiresAt: Date; message: string }
  | { kind: 'in_stock'; variantId: string; message: string }
  | { kind: 'refused'; code: NotifyMeRefusal; message: string; retryAfterSec?: number };

export interface NotifyMeRequest {
  /** The shop's myshopify domain, from the signed query. */
  shop: string;
  /** The signed logged-in customer id; null for a guest. */
  loggedInCustomerId: string | null;
  /** The shopper's address as the per-IP limit keys it (src/intake/client-ip.ts ipKey). */
  clientKey: string;
  /** The parsed body (form fields or JSON), unchecked. */
  body: unknown;
}

export interface NotifyMe {
  request(req: NotifyMeRequest): Promise<NotifyMeResult>;
}

export interface NotifyMeDeps {
  db: Db;
  logger: Logger;
  variants: VariantLookup;
  customers: CustomerEmails;
  now: () => Date;
  /** How long a subscription is kept after its latest subscribe. */
  keepDays: number;
  /** Requests per minute per client address (a burst of as many). */
  perIpPerMinute: number;
  /** Requests per hour per email, and per logged-in customer (a burst of as many). */
  perEmailPerHour: number;
  /** How long Shopify lookups may take, in ms. Default 3000. */
  lookupDeadlineMs?: number;
  /** Monotonic ms for the rate limits (tests). */
  nowMs?: () => number;
}

export const MESSAGES = {
  created: "Thanks! We'll email you when it's back in stock.",
  renewed: "You're already on the list: we'll email you when it's back in stock.",
  in_stock: "Good news: it's in stock now. You can order it straight away.",
  invalid_request: 'Choose an option of this product, then try again.',
  email_required: 'Enter your email address.',
  invalid_email: 'Enter a valid email address, like name@example.com.',
  no_email: 'Your account has no email address. Add one to your account to get an alert.',
  unknown_variant: "This option can't be followed. Refresh the page and try again.",
  rate_limited: 'Too many requests. Please try again in a few minutes.',
  unavailable: "We couldn't save your request just now. Please try again in a moment.",
  not_available: "Back-in-stock alerts aren't available in this shop right now.",
} as const satisfies Record<NotifyMeRefusal | 'created' | 'renewed' | 'in_stock', string>;

const DAY_MS = 86_400_000;

const refused = (code: NotifyMeRefusal, retryAfterSec?: number): NotifyMeResult => ({
  kind: 'refused',
  code,
  message: MESSAGES[code],
  ...(retryAfterSec !== undefined ? { retryAfterSec } : {}),
});

export function createNotifyMe(deps: NotifyMeDeps): NotifyMe {
  const logger = deps.logger.child({ component: 'notify-me' });
  const nowMs = deps.nowMs;
  const perIp = new TokenBuckets({ rate: deps.perIpPerMinute / 60, burst: deps.perIpPerMinute, nowMs });
  const perEmail = new TokenBuckets({ rate: deps.perEmailPerHour / 3600, burst: deps.perEmailPerHour, nowMs });
  /** Seconds until one more request of a limit comes back, for Retry-After. */
  const ipRetry = Math.ceil(60 / deps.perIpPerMinute);
  const emailRetry = Math.ceil(3600 / deps.perEmailPerHour);
  const deadlineMs = deps.lookupDeadlineMs ?? 3000;

  return {
    async request(req) {
      if (!perIp.take(req.clientKey)) return refused('rate_limited', ipRetry);
      const body = parseNotifyBody(req.body);
      if (!body) return refused('invalid_request');

      let shop: { id: string; domain: string; uninstalledAt: Date | null } | null;
      try {
        shop = await deps.db.shop.findUnique({ where: { domain: req.shop }, select: { id: true, domain: true, uninstalledAt: true } });
      } catch (err) {
        logger.warn({ shop: req.shop, err: (err as Error).message }, 'notify-me: the database did not answer; nothing stored');
        return refused('unavailable', 5);
      }
      if (!shop || shop.uninstalledAt) return refused('not_available');
      const deadline = Date.now() + deadlineMs;

      let email: string;
      let customerId: string | null = null;
      if (req.loggedInCustomerId !== null) {
        customerId = req.loggedInCustomerId;
        if (!perEmail.take(`${shop.id}\u0000c\u0000${customerId}`)) return refused('rate_limited', emailRetry);
        const found = await deps.customers.emailOf(shop, customerId, deadline);
        if (found.kind === 'unavailable') return refused(found.reason === 'no_scope' ? 'not_available' : 'unavailable', 5);
        if (found.kind !== 'found') return refused('no_email');
        email = found.email;
      } else {
        const typed = guestEmail(body.email);
        if (!typed.ok) return refused(typed.problem);
        email = typed.email;
      }
      if (!perEmail.take(`${shop.id}\u0000e\u0000${email}`)) return refused('rate_limited', emailRetry);

      const variant = await deps.variants.find(shop, body.variantId, deadline);
      if (variant.kind === 'unknown') return refused('unknown_variant');
      if (variant.kind === 'unavailable') {
        if (variant.reason === 'no_scope') {
          logger.warn({ shop: shop.domain }, 'notify-me: the shop has not granted read_products; no alert can be taken');
          return refused('not_available');
        }
        return refused('unavailable', 5);
      }
      if (variant.variant.availableForSale) return { kind: 'in_stock', variantId: body.variantId, message: MESSAGES.in_stock };

      const at = deps.now();
      const expiresAt = new Date(at.getTime() + deps.keepDays * DAY_MS);
      try {
        const stored = await subscribe(deps.db, {
          shopId: shop.id,
          variantId: body.variantId,
          productId: variant.variant.productId,
          email,
          customerId,
          source: customerId !== null ? 'customer' : 'guest',
          at,
          expiresAt,
        });
        return {
          kind: 'subscribed',
          created: stored === 'created',
          variantId: body.variantId,
          productId: variant.variant.productId,
          expiresAt,
          message: MESSAGES[stored],
        };
      } catch (err) {
        logger.warn({ shop: shop.domain, err: (err as Error).message }, 'notify-me: the subscription could not be stored');
        return refused('unavailable', 5);
      }
    },
  };
}
