// An outbox message as delivery sees it: its states, why it waits, what a claim hands the worker,
// and the record of one attempt. The repository (repository.ts) stores them; the delivery worker
// (delivery/) moves them from state to state.
import type { ClassIndex } from './classes';

export type MessageStatus =
  'queued' | 'delivering' | 'delivered' | 'delivered_unconfirmed' | 'held' | 'dead' | 'cancelled' | 'skipped' | 'expired';
/**
 * Why a message waits: `invalid_key` (the service refused the key), `disconnected`, `uninstalled`,
 * `key_unreadable` (no configured encryption key decrypts the saved key), or `service_not_found`
 * (the service's address answered 404: a configuration problem, lifted by the re-probe in
 * holds.ts, at process start, or by a manual retry).
 */
export type HeldReason = 'invalid_key' | 'disconnected' | 'uninstalled' | 'key_unreadable' | 'service_not_found';

export interface AttemptRecord {
  attempt: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  outcome: string;
  error: string | null;
  workerId?: string;
}

/** What the worker needs of a claimed message. */
export interface ClaimedMessage {
  id: number;
  shopId: string;
  kind: string;
  eventName: string;
  /** The delivery class (classes.ts). */
  deliveryClass: ClassIndex;
  email: string | null;
  body: string;
  attempts: number;
  sends: number;
  runAt: Date;
  dueAt: Date;
  lockedUntil: Date | null;
}

/** A claimed message back on the queue, for the caller to wake its shop. */
export interface Requeued {
  shopId: string;
  runAt: Date;
}
