// A unit of stage 2: the receipts one transaction takes, from the oldest pending. A compliance or
// lifecycle receipt is a unit alone (it changes what the receipts after it may see); otherwise a
// unit is the run of receipts up to the next such one, cut by size. Pure: where a unit ends, a
// receipt's body parsed, and a database error said in a line a receipt can keep.
import type { PendingReceipt, ReceiptOutcome } from '../intake/receipt-store';
import { parseWebhookBody } from '../mapping';
import { isSerial } from './topics';

/**
 * Raw bytes of the receipts one unit takes at most (one receipt always): a unit's transaction
 * writes its messages and erases its bodies in one synchronous step on SQLite, so a run of huge
 * payloads is cut into units of about this size, with a turn of the event loop between them.
 * Ordinary receipts (a few KB) fill a batch of 200 long before this.
 */
export const MAX_UNIT_BYTES = 1_048_576;

/** A receipt as its handler takes it: its body parsed. */
export interface ParsedReceipt {
  id: number;
  webhookId: string;
  shopDomain: string;
  topic: string;
  receivedAt: Date;
  /** X-Shopify-Triggered-At, when the webhook carried it. */
  triggeredAt?: Date | null;
  payload: unknown;
}

/** A receipt of the unit as stage 2 takes it: its body parsed, or rejected as not JSON. */
export interface Parsed {
  kind: string;
  receipt?: ParsedReceipt;
  rejected?: ReceiptOutcome;
}

/**
 * How many receipts from the first make one unit: a compliance receipt alone, else the run up to
 * the next one, cut where the bodies pass MAX_UNIT_BYTES.
 */
export function unitEnd(pending: PendingReceipt[]): number {
  if (pending.length === 0 || isSerial(pending[0]!.topic, pending[0]!.kind)) return Math.min(1, pending.length);
  let bytes = 0;
  for (let i = 0; i < pending.length; i++) {
    const p = pending[i]!;
    if (isSerial(p.topic, p.kind)) return i;
    bytes += p.body?.length ?? 0;
    if (bytes > MAX_UNIT_BYTES) return Math.max(1, i);
  }
  return pending.length;
}

export function parse(p: PendingReceipt): Parsed {
  try {
    const payload = parseWebhookBody(p.body ?? '');
    return {
      kind: p.kind,
      receipt: {
        id: p.id,
        webhookId: p.webhookId,
        shopDomain: p.shopDomain,
        topic: p.topic,
        receivedAt: p.receivedAt,
        triggeredAt: p.triggeredAt,
        payload,
      },
    };
  } catch {
    return { kind: p.kind, rejected: { id: p.id, outcome: 'rejected', reason: 'the body is not JSON', messageCount: 0, customerId: null } };
  }
}

/** The database's own words: Prisma puts them on the last line, after the call site. */
export function describeError(message: string): string {
  return (
    message
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .pop()
      ?.slice(0, 200) ?? 'unknown error'
  );
}
