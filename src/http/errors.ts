import type { Response } from 'express';
import type { UseCaseError, UseCaseErrorCode } from '../admin/errors';

/** The contract's error body: {"error": {"code": "<snake_case>", "message": "<for a person>"}}. */
export function sendError(res: Response, status: number, code: string, message: string, extra?: Record<string, unknown>): void {
  res.status(status).json({ error: { code, message, ...extra } });
}

/**
 * The one place a use case's refusal becomes HTTP: its status, and the code the contract puts
 * in the body (the use case's own code unless named here). A new code fails to compile until
 * it has a row.
 */
export const USE_CASE_ERROR_HTTP: Readonly<Record<UseCaseErrorCode, { status: number; code?: string }>> = {
  not_found: { status: 404 },
  not_connected: { status: 409 },
  invalid_key: { status: 422 },
  // the contract's code for it is invalid_key too; 409, as the connection's state is the conflict
  saved_key_invalid: { status: 409, code: 'invalid_key' },
  key_unreadable: { status: 409 },
  not_retryable: { status: 409 },
  service_unavailable: { status: 502 },
  shopify_unavailable: { status: 502 },
  backfill_running: { status: 409 },
  no_backfill_running: { status: 404 },
};

export function sendUseCaseError(res: Response, err: UseCaseError): void {
  const http = USE_CASE_ERROR_HTTP[err.code];
  sendError(res, http.status, http.code ?? err.code, err.message, err.details);
}

/** A request the HTTP layer itself refuses (route-level validation); mapped once by the app. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}
