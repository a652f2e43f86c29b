import { BACKOFF_SCHEDULE_MS, decideRetry, GIVE_UP_AFTER_MS, NOT_FOUND_ATTEMPTS, scheduleSpanMs } from '../../../src/outbox/retry-policy';

const t0 = new Date('2026-11-21T10:00:00Z');
const at = (ms: number) => new Date(t0.getTime() + ms);
const mid = () => 0.5; // no jitter

describe('retry policy', () => {
  it('backs off exponentially on retryable failures, capped at the last step', () => {
    const delays = [1, 2, 3, 4, 9, 20].map((n) => {
      const d = decideRetry({ kind: 'retryable', message: '500' }, n, t0, t0, mid);
      return d.action === 'retry' ? d.runAt.getTime() - t0.getTime() : -1;
    });
    expect(delays).toEqual([5_000, 30_000, 120_000, 300_000, 4 * 3_600_000, 4 * 3_600_000]);
  });

  it('jitters by at most ±20%', () => {
    const lo = decideRetry({ kind: 'retryable', message: 'x' }, 2, t0, t0, () => 0);
    const hi = decideRetry({ kind: 'retryable', message: 'x' }, 2, t0, t0, () => 1);
    expect(lo).toMatchObject({ action: 'retry', runAt: at(24_000) });
    expect(hi).toMatchObject({ action: 'retry', runAt: at(36_000) });
  });

  it('honours Retry-After on a 429, within bounds', () => {
    expect(decideRetry({ kind: 'rate_limited', message: '429', retryAfterMs: 3_000 }, 1, t0, t0)).toMatchObject({ runAt: at(3_000) });
    expect(decideRetry({ kind: 'rate_limited', message: '429' }, 1, t0, t0)).toMatchObject({ runAt: at(1_000) });
    expect(decideRetry({ kind: 'rate_limited', message: '429', retryAfterMs: 99 * 3_600_000 }, 1, t0, t0)).toMatchObject({
      runAt: at(600_000),
    });
    expect(decideRetry({ kind: 'rate_limited', message: '429', retryAfterMs: 0 }, 1, t0, t0)).toMatchObject({ runAt: at(500) });
  });

  it('at the send cap, stops only a send that may have reached the service', () => {
    const cap = { sends: 8, maxSends: 8 };
    // a timeout after the request was written: the service may hold 8 copies already
    expect(decideRetry({ kind: 'retryable', message: 'no answer', mayHaveArrived: true }, 8, t0, at(7_000_000), mid, cap)).toMatchObject({
      action: 'dead',
    });
    // no connection in time, or refused: it never left, so it retries (until the 24-h give-up)
    expect(
      decideRetry({ kind: 'retryable', message: 'no connection', mayHaveArrived: false }, 8, t0, at(7_000_000), mid, cap),
    ).toMatchObject({ action: 'retry' });
    expect(
      decideRetry({ kind: 'retryable', message: 'no answer', mayHaveArrived: true }, 8, t0, at(7_000_000), mid, { sends: 7, maxSends: 8 }),
    ).toMatchObject({ action: 'retry' });
  });

  it('sends a 400 straight to dead with the service message', () => {
    expect(decideRetry({ kind: 'bad_request', message: 'email is invalid' }, 1, t0, t0)).toEqual({
      action: 'dead',
      reason: 'email is invalid',
    });
  });

  it('holds on 401 and pauses the workspace on 403', () => {
    expect(decideRetry({ kind: 'auth', message: '401' }, 1, t0, t0)).toEqual({ action: 'hold', reason: 'invalid_key' });
    expect(decideRetry({ kind: 'blocked', message: 'too many bad requests' }, 1, t0, t0)).toMatchObject({
      action: 'pause_workspace',
      until: at(60_000),
    });
  });

  it('gives up once about 24 hours have passed since the message was first due', () => {
    const late = at(GIVE_UP_AFTER_MS - 60_000);
    const d = decideRetry({ kind: 'retryable', message: 'HTTP 503' }, 14, t0, late, mid);
    expect(d.action).toBe('dead');
    expect(d.action === 'dead' && d.reason).toMatch(/gave up after 14 attempts .*HTTP 503/);
  });

  it('spans close to 24 hours in total', () => {
    const { retries, spanMs } = scheduleSpanMs();
    expect(spanMs).toBeGreaterThan(20 * 3_600_000);
    expect(spanMs).toBeLessThanOrEqual(GIVE_UP_AFTER_MS);
    expect(retries).toBeGreaterThan(BACKOFF_SCHEDULE_MS.length);
  });
});

describe('retry policy: a service address that answers 404 (not_found)', () => {
  const notFound = {
    kind: 'not_found' as const,
    message: 'The email service address answered 404 Not Found: check SERVICE_WEBHOOK_URL',
    mayHaveArrived: false,
  };

  it('retries with the normal backoff for the first attempts', () => {
    expect(decideRetry(notFound, 1, t0, t0, mid)).toMatchObject({ action: 'retry', runAt: at(5_000) });
    expect(decideRetry(notFound, NOT_FOUND_ATTEMPTS - 1, t0, t0, mid)).toMatchObject({ action: 'retry', runAt: at(30_000) });
  });

  it('then holds the shop as a configuration problem, never dead', () => {
    expect(NOT_FOUND_ATTEMPTS).toBe(3);
    expect(decideRetry(notFound, NOT_FOUND_ATTEMPTS, t0, t0, mid)).toEqual({ action: 'hold', reason: 'service_not_found' });
    expect(decideRetry(notFound, 40, t0, at(GIVE_UP_AFTER_MS + 60_000), mid)).toEqual({ action: 'hold', reason: 'service_not_found' });
  });

  it('holds at the first 404 when the shop is already held for one', () => {
    expect(decideRetry(notFound, 1, t0, t0, mid, undefined, { heldForNotFound: true })).toEqual({
      action: 'hold',
      reason: 'service_not_found',
    });
  });

  it('a message near its give-up horizon is held, not killed, by a 404', () => {
    expect(decideRetry(notFound, 1, t0, at(GIVE_UP_AFTER_MS - 1_000), mid)).toEqual({ action: 'hold', reason: 'service_not_found' });
  });

  it('a service that took the request but said success: false, a proxy page, a redirect, 408, 425: retried with backoff, never dead at once', () => {
    // the client classifies them all as retryable; none counts against the send cap
    const refused = { kind: 'retryable' as const, message: 'answered 200 but said success: false', mayHaveArrived: false };
    expect(decideRetry(refused, 1, t0, t0, mid, { sends: 8, maxSends: 8 })).toMatchObject({ action: 'retry', runAt: at(5_000) });
  });
});
