// The steps every Admin API look-up on a shop's behalf shares (customers by email, a customer's
// email, a variant): the shop's offline session if it grants the scopes the query needs, a call
// that ends at the caller's deadline, and why it went unanswered. A look-up never throws: a shop
// without a session, without the scope, throttled or slow answers with its reason.
import type { Session } from '@shopify/shopify-api';
import type { Logger } from '../../observability/logger';
import { AdminDeadlineError, AdminThrottledError } from './admin-graphql';
import { describeShopifyError } from './errors';
import { hasScopes } from './scopes';
import type { OfflineTokens } from './tokens';

/** Why a look-up got no answer from Shopify. */
export type LookupUnanswered = 'no_session' | 'no_scope' | 'over_budget' | 'throttled' | 'timeout' | 'failed';

/** The shop's offline session when it grants `scopes`, otherwise why not (a token store failure is no session). */
export async function lookupSession(
  tokens: Pick<OfflineTokens, 'getOfflineSession'>,
  domain: string,
  scopes: readonly string[],
): Promise<Session | 'no_session' | 'no_scope'> {
  let session: Session | null;
  try {
    session = await tokens.getOfflineSession(domain);
  } catch {
    session = null;
  }
  if (!session) return 'no_session';
  return hasScopes(session.scope, scopes) ? session : 'no_scope';
}

/**
 * Runs `call` with a signal that aborts at `deadline` (epoch ms). A call cut short by it throws
 * AdminDeadlineError, whatever the aborted request threw.
 */
export async function beforeDeadline<T>(deadline: number, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), Math.max(0, deadline - Date.now()));
  try {
    return await call(controller.signal);
  } catch (err) {
    if (controller.signal.aborted && !(err instanceof AdminThrottledError)) throw new AdminDeadlineError();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** Why a call under beforeDeadline failed, and what a log line may say of it (no token, no secret). */
export function unanswered(err: unknown): { reason: 'throttled' | 'timeout' | 'failed'; failure: string } {
  if (err instanceof AdminThrottledError) return { reason: 'throttled', failure: err.message };
  if (err instanceof AdminDeadlineError) return { reason: 'timeout', failure: err.message };
  return { reason: 'failed', failure: describeShopifyError(err) };
}

export interface ShopLookup {
  tokens: Pick<OfflineTokens, 'getOfflineSession'>;
  logger: Logger;
  /** Takes one of the shop's Admin API calls; false: none left now (over_budget). */
  budget?: (shopId: string) => boolean;
}

/**
 * One Admin API call for `shop` that needs `scopes`, answered by `deadline`: the call's value, or
 * why there is none. A failed call is logged at warn with `unansweredMessage`.
 */
export async function lookUp<T>(
  deps: ShopLookup,
  shop: { id: string; domain: string },
  scopes: readonly string[],
  deadline: number,
  unansweredMessage: string,
  call: (session: Session, signal: AbortSignal) => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; reason: LookupUnanswered }> {
  const session = await lookupSession(deps.tokens, shop.domain, scopes);
  if (typeof session === 'string') return { ok: false, reason: session };
  if (deps.budget && !deps.budget(shop.id)) return { ok: false, reason: 'over_budget' };
  try {
    return { ok: true, value: await beforeDeadline(deadline, (signal) => call(session, signal)) };
  } catch (err) {
    const { reason, failure } = unanswered(err);
    deps.logger.warn({ shop: shop.domain, reason, failure }, unansweredMessage);
    return { ok: false, reason };
  }
}
