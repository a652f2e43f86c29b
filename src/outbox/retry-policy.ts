// The retry schedule as data, and one pure function from (attempt, failure, now) to what the
// worker does next. Drawn from Svix's calculate_retry_delay: capped exponential backoff with
// ±20% jitter, Retry-After honoured within bounds, and a give-up horizon of about 24 hours.
import type { FailureKind } from '../integrations/service/types';

/** Delay before retry number n (1-based) after a retryable failure; the last entry repeats. */
export const BACKOFF_SCHEDULE_MS = [
  5_000,
  30_000,
  2 * 60_000,
  5 * 60_000,
  15 * 60_000,
  30 * 60_000,
  60 * 60_000,
  2 * 3_600_000,
  4 * 3_600_000,
] as const;

/** A message that is still failing this long after it first became due is dead. */
export const GIVE_UP_AFTER_MS = 24 * 3_600_000;
export const JITTER = 0.2;
/** Bounds on a server's Retry-After, so a bad header neither hammers nor stalls us. */
export const RETRY_AFTER_MIN_MS = 500;
export const RETRY_AFTER_MAX_MS = 10 * 60_000;
/** Pause for a workspace the service has blocked (403) when it gives no Retry-After. */
export const BLOCK_PAUSE_MS = 60_000;

/**
 * Attempts a message makes against an address that answers 404 before its shop's deliveries are
 * held (`service_not_found`): a redeploy or a proxy's hiccup gets the normal backoff's first
 * minute to pass; a wrong SERVICE_WEBHOOK_URL holds the shop instead of killing its messages.
 */
export const NOT_FOUND_ATTEMPTS = 3;

/** Why a shop's deliveries are held by a failure (others: disconnect, uninstall). */
export type HoldReason = 'invalid_key' | 'service_not_found';

export type RetryDecision =
  | { action: 'retry'; runAt: Date; reason: string }
  | { action: 'dead'; reason: string }
  | { action: 'hold'; reason: HoldReason }
  | { action: 'pause_workspace'; until: Date; runAt: Date; reason: string };

/** What the worker knows of the message's shop when it matters to the decision. */
export interface ShopState {
  /** The shop's deliveries are already held because the address answered 404: the next 404 holds at once. */
  heldForNotFound?: boolean;
}

export interface FailureInfo {
  kind: FailureKind;
  message: string;
  retryAfterMs?: number;
  /** The request may have reached the service (a timeout): it counts against the send cap. */
  mayHaveArrived?: boolean;
}

/** How many sends of the message may have reached the service, and the cap on them. */
export interface SendCount {
  sends: number;
  maxSends: number;
}

/** Why a message at the send cap is not sent again. */
export function sendCapReason(sends: number, why: string): string {
  return `not sent again: sent ${sends} times without a confirmed outcome (${why}); the service may already have it. Retry it from the delivery log if it did not arrive.`;
}

export function clamp(n: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, n));
}

export function jittered(ms: number, random: () => number): number {
  return Math.round(ms * (1 - JITTER + 2 * JITTER * random()));
}

export function backoffMs(retryNumber: number): number {
  const i = clamp(retryNumber, 1, BACKOFF_SCHEDULE_MS.length) - 1;
  return BACKOFF_SCHEDULE_MS[i]!;
}

/**
 * @param attempts how many attempts have been made, including the one that just failed
 * @param firstDueAt when the message first became due (the give-up clock starts there)
 * @param shop what the worker read of the message's shop, when the failure needs it (not_found)
 */
export function decideRetry(
  failure: FailureInfo,
  attempts: number,
  firstDueAt: Date,
  now: Date,
  random: () => number = Math.random,
  count?: SendCount,
  shop: ShopState = {},
): RetryDecision {
  if (failure.kind === 'bad_request') return { action: 'dead', reason: failure.message };
  if (failure.kind === 'auth') return { action: 'hold', reason: 'invalid_key' };
  // a wrong address is no fault of the message: after a few tries its shop waits, never dies
  if (failure.kind === 'not_found' && (attempts >= NOT_FOUND_ATTEMPTS || shop.heldForNotFound))
    return { action: 'hold', reason: 'service_not_found' };
  // the service may already hold this many copies: another send could be one more duplicate
  if (count && failure.mayHaveArrived && count.sends >= count.maxSends) {
    return { action: 'dead', reason: sendCapReason(count.sends, failure.message) };
  }

  const elapsed = now.getTime() - firstDueAt.getTime();
  let delay: number;
  if (failure.kind === 'rate_limited') {
    // the pacer should prevent these; when one comes, wait what the service asks (or a second)
    delay = clamp(failure.retryAfterMs ?? 1_000, RETRY_AFTER_MIN_MS, RETRY_AFTER_MAX_MS);
  } else if (failure.kind === 'blocked') {
    delay = clamp(failure.retryAfterMs ?? BLOCK_PAUSE_MS, RETRY_AFTER_MIN_MS, RETRY_AFTER_MAX_MS);
  } else {
    delay =
      failure.retryAfterMs !== undefined
        ? clamp(failure.retryAfterMs, RETRY_AFTER_MIN_MS, RETRY_AFTER_MAX_MS)
        : jittered(backoffMs(attempts), random);
  }
  if (elapsed + delay > GIVE_UP_AFTER_MS) {
    if (failure.kind === 'not_found') return { action: 'hold', reason: 'service_not_found' };
    return { action: 'dead', reason: `gave up after ${attempts} attempts over ${Math.round(elapsed / 60_000)} min: ${failure.message}` };
  }
  const runAt = new Date(now.getTime() + delay);
  if (failure.kind === 'blocked') return { action: 'pause_workspace', until: runAt, runAt, reason: failure.message };
  return { action: 'retry', runAt, reason: failure.message };
}

/** Total time the schedule spans before give-up, for docs and tests. */
export function scheduleSpanMs(): { retries: number; spanMs: number } {
  let span = 0;
  let retries = 0;
  while (span + backoffMs(retries + 1) <= GIVE_UP_AFTER_MS) {
    retries += 1;
    span += backoffMs(retries);
  }
  return { retries, spanMs: span };
}
