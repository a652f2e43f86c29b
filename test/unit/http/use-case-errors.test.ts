// Use cases throw UseCaseError with a code; the app's error handler turns each code into the
// contract's status and body, in one table (src/http/errors.ts).
import { Router } from 'express';
import request from 'supertest';
import type { Db } from '../../../src/db/client';
import { createApp } from '../../../src/http/app';
import { HttpError } from '../../../src/http/errors';
import { createLogger } from '../../../src/observability/logger';
import type { Metrics } from '../../../src/observability/metrics';
import { USE_CASE_ERROR_CODES, UseCaseError, type UseCaseErrorCode } from '../../../src/admin/errors';

// what app-contract.md, the README and the admin page expect for each refusal
const EXPECTED: Record<UseCaseErrorCode, { status: number; code: string }> = {
  not_found: { status: 404, code: 'not_found' },
  not_connected: { status: 409, code: 'not_connected' },
  invalid_key: { status: 422, code: 'invalid_key' },
  saved_key_invalid: { status: 409, code: 'invalid_key' },
  key_unreadable: { status: 409, code: 'key_unreadable' },
  not_retryable: { status: 409, code: 'not_retryable' },
  service_unavailable: { status: 502, code: 'service_unavailable' },
  shopify_unavailable: { status: 502, code: 'shopify_unavailable' },
  backfill_running: { status: 409, code: 'backfill_running' },
  no_backfill_running: { status: 404, code: 'no_backfill_running' },
};

function appThrowing(make: () => Error) {
  const r = Router();
  r.get('/api/boom', async () => {
    throw make();
  });
  return createApp({ db: {} as Db, logger: createLogger('silent'), metrics: {} as Metrics, routers: [r] });
}

describe('use-case errors over HTTP', () => {
  it.each(USE_CASE_ERROR_CODES.map((c) => [c]))('%s keeps its status and body', async (code) => {
    const res = await request(appThrowing(() => new UseCaseError(code, `a sentence about ${code}`))).get('/api/boom');
    expect(res.status).toBe(EXPECTED[code].status);
    expect(res.body).toEqual({ error: { code: EXPECTED[code].code, message: `a sentence about ${code}` } });
  });

  it('carries the details a use case adds, such as the running import’s id', async () => {
    const res = await request(
      appThrowing(() => new UseCaseError('backfill_running', 'An import is already running', { backfill_id: 'b1' })),
    ).get('/api/boom');
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: { code: 'backfill_running', message: 'An import is already running', backfill_id: 'b1' } });
  });

  it('route-level validation stays an HTTP error, and anything else is a 500 that says nothing inside', async () => {
    const invalid = await request(appThrowing(() => new HttpError(400, 'invalid_request', 'limit: too big'))).get('/api/boom');
    expect(invalid.status).toBe(400);
    expect(invalid.body).toEqual({ error: { code: 'invalid_request', message: 'limit: too big' } });
    const other = await request(appThrowing(() => new Error('secret internals'))).get('/api/boom');
    expect(other.status).toBe(500);
    expect(other.body.error.code).toBe('internal_error');
    expect(JSON.stringify(other.body)).not.toContain('secret internals');
  });
});
