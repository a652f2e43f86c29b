// Recording that the service accepted a message. From then on nothing may send it again, so a
// record that fails never releases it for another send: the write is tried again a few times
// (recordRetryMs), then the smallest write that takes the message out of the queue
// (delivered_unconfirmed) is tried until its lock would expire.
import { pause } from '../../lib/backoff';
import type { Logger } from '../../observability/logger';
import type { Metrics } from '../../observability/metrics';
import type { AttemptRecord, ClaimedMessage } from '../message';
import type { OutboxRepository } from '../repository';

export interface CompleterDeps {
  repo: OutboxRepository;
  logger: Logger;
  metrics: Metrics;
  now: () => Date;
  /** Waits between attempts to record an outcome that failed to write. */
  recordRetryMs: readonly number[];
}

/** How long past its lock the last write of an accepted message is still tried, and how often. */
const UNCONFIRMED_GRACE_MS = 5_000;
const UNCONFIRMED_RETRY_MS = 1_000;

/** Records that the service accepted `msg` at `at`; `scrub` drops its address (a contact delete). */
export async function recordAccepted(
  deps: CompleterDeps,
  workerId: string,
  msg: ClaimedMessage,
  at: Date,
  attempt: AttemptRecord,
  scrub: boolean,
): Promise<void> {
  const { repo, logger, metrics } = deps;
  const waits = deps.recordRetryMs;
  let lastError = '';
  for (let i = 0; i <= waits.length; i++) {
    try {
      await repo.markDelivered(msg, workerId, at, attempt, scrub);
      return;
    } catch (err) {
      lastError = (err as Error).message;
      logger.warn({ messageId: msg.id, err: lastError, try: i + 1 }, 'recording a delivery failed; trying again');
      if (i < waits.length) await pause(waits[i]!);
    }
  }
  const until = (msg.lockedUntil?.getTime() ?? Date.now()) + UNCONFIRMED_GRACE_MS;
  for (;;) {
    try {
      await repo.markUnconfirmed(msg, workerId, at, lastError.slice(0, 300), scrub);
      metrics.unconfirmed.inc();
      logger.error(
        { messageId: msg.id, shopId: msg.shopId },
        'the service accepted a message but its delivery could not be recorded; marked delivered_unconfirmed, it will not be sent again',
      );
      return;
    } catch (err) {
      if (deps.now().getTime() > until) {
        logger.error(
          { messageId: msg.id, err: (err as Error).message },
          'the database refused every write for an accepted message; its lock will expire and it may be sent again',
        );
        return;
      }
      await pause(UNCONFIRMED_RETRY_MS);
    }
  }
}
