// After a redaction commits, make the erased data unreadable on disk too, not only logically:
// - SQLite: every connection has secure_delete on (client.ts), so deleted records are
//   overwritten in the database file; the WAL still holds old page images until it is
//   checkpointed, so it is checkpointed and truncated here.
// - PostgreSQL: deleted rows stay as dead tuples until VACUUM; the tables a redaction touched
//   are vacuumed here (VACUUM cannot run in a transaction, hence after the commit). WAL
//   segments and backups are the operator's to manage (docs/privacy.md#on-disk).
// customers/redact also queues the contact delete, whose row keeps the address until it is
// sent. The pass right after the redaction copies that row into the file (SQLite) or leaves its
// old version as a dead tuple (PostgreSQL), so the worker that sends it and scrubs the row (in
// whichever process, after however long a hold) asks for one more pass: afterScrub().
import type { Logger } from '../observability/logger';
import { rawOf, type Db, type RawDb } from './client';

/** The tables a redaction deletes from (every table that holds shop or customer data). */
export const REDACTED_TABLES = [
  'OutboxMessage',
  'DeliveryAttempt',
  'WebhookReceipt',
  'CustomerProfile',
  'DataExport',
  'OrderSummary',
  'FulfillmentState',
  'Connection',
  'Session',
  'Shop',
  'ShopSettings',
  'ShopDue',
  'ProductInfo',
  'WebPixel',
  'Backfill',
  'PixelVisitor',
  'PixelEvent',
  'StockSubscription',
  'ProductInterest',
] as const;

/** What the scrub of a sent (or dead) contact delete rewrites. */
const SCRUBBED_TABLES = ['OutboxMessage', 'DeliveryAttempt'] as const;

export interface Erasure {
  /** Call after a redaction committed; resolves once the disk no longer holds what it erased. */
  afterRedaction(tables?: readonly string[]): Promise<void>;
  /** Call after a contact delete's row was scrubbed of its address. */
  afterScrub(): Promise<void>;
}

export function createErasure(db: Db, logger: Logger): Erasure {
  const raw = rawOf(db);
  // One pass at a time, and at most one waiting, which takes every table asked for meanwhile:
  // a burst of redactions or scrubs costs one pass after the last, not one each.
  let running: Promise<void> = Promise.resolve();
  let waiting: { tables: Set<string>; done: Promise<void> } | null = null;

  const afterRedaction = (tables: readonly string[] = REDACTED_TABLES): Promise<void> => {
    if (waiting) {
      for (const t of tables) waiting.tables.add(t);
      return waiting.done;
    }
    const next = { tables: new Set<string>(tables), done: Promise.resolve() };
    next.done = running.then(() => {
      waiting = null;
      return compact(raw, [...next.tables], logger);
    });
    waiting = next;
    running = next.done;
    return next.done;
  };
  return { afterRedaction, afterScrub: () => afterRedaction(SCRUBBED_TABLES) };
}

async function compact(raw: RawDb, tables: readonly string[], logger: Logger): Promise<void> {
  try {
    if (raw.provider === 'sqlite') {
      const res = await raw.exclusive((conn) => conn.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>);
      if (res[0]?.busy) logger.warn('WAL checkpoint after a redaction was blocked by a reader; it completes at the next checkpoint');
    } else {
      await raw.pool.query(`VACUUM ${tables.map((t) => `"${t}"`).join(', ')}`);
    }
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'could not compact the database after a redaction');
  }
}
