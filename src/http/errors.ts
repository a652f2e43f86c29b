import type { Response } from 'express';

/** The contract's error body: {"error": {"code": "<snake_case>", "message": "<for a person>"}}. */
export function sendError(res: Response, status: number, code: string, message: string, extra?: Record<string, unknown>): void {
  res.status(status).json({ error: { code, message, ...extra } });
}

/** A use-case failure that maps to an HTTP status; thrown by use cases, mapped once by the app. */
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
