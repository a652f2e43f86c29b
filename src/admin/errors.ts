// The closed set of ways a use case refuses a request. Use cases throw UseCaseError and know
// nothing of HTTP; the HTTP layer maps each code to a status in one table (src/http/errors.ts).

export const USE_CASE_ERROR_CODES = [
  /** The shop has no such delivery, data request, ... */
  'not_found',
  /** The action needs a connection to the email service and the shop has none. */
  'not_connected',
  /** The service refused the API key just now (on connect, or on a read with the saved key). */
  'invalid_key',
  /** The saved connection is already marked invalid_key: nothing was asked of the service. */
  'saved_key_invalid',
  /** The saved key cannot be decrypted with any configured encryption key: nothing was asked of the service. */
  'key_unreadable',
  /** Only dead, held or unconfirmed deliveries can be retried. */
  'not_retryable',
  /** The email service could not be reached or failed; nothing was changed. */
  'service_unavailable',
  /** Shopify could not be reached or did not answer what was needed. */
  'shopify_unavailable',
  /** An import is already running for the shop (details carry its backfill_id). */
  'backfill_running',
  /** There is no import to cancel. */
  'no_backfill_running',
] as const;

export type UseCaseErrorCode = (typeof USE_CASE_ERROR_CODES)[number];

export class UseCaseError extends Error {
  constructor(
    readonly code: UseCaseErrorCode,
    /** For a person: the merchant reads it in the admin page. */
    message: string,
    /** Extra fields a caller may show, e.g. the running import's backfill_id. */
    readonly details?: Readonly<Record<string, string>>,
  ) {
    super(message);
    this.name = 'UseCaseError';
  }
}
