// The Connection row's one writer. The merchant's use cases save, check, re-encrypt and forget a
// shop's key here (admin/connection.ts, admin/stored-keys.ts); delivery records here what it
// finds (delivery/connection-health.ts): the last delivery, the last error, a key the service
// refused. Whatever changes a connection's status, or the error its page shows, is in this file.
import type { Connection, Prisma } from '@prisma/client';
import { rawOf, type Db } from '../db/client';
import { dialectOf } from '../db/dialects';
import { prepare, rawTimestamp, type RawStatement, type StatementBuilder } from '../db/raw';

// The connections' "last successful delivery", for several shops in one statement. A success
// clears the last error unless that error is newer than the success. Parameters: the rows of
// [shop, time], as the dialect passes rows (rowsParams).
const DELIVERED: StatementBuilder = (p, d) => {
  const rows = d.rowsOf(
    [
      { name: 'shopId', type: 'text' },
      { name: 'at', type: 'timestamp' },
    ],
    p,
  );
  const older = `"c"."lastErrorAt" IS NULL OR "c"."lastErrorAt" <= "v"."at"`;
  return `
  UPDATE "Connection" AS "c" SET "lastDeliveredAt" = "v"."at", "updatedAt" = "v"."at",
    "lastError" = CASE WHEN ${older} THEN NULL ELSE "c"."lastError" END,
    "lastErrorAt" = CASE WHEN ${older} THEN NULL ELSE "c"."lastErrorAt" END
  FROM (${rows}) AS "v" WHERE "c"."shopId" = "v"."shopId"`;
};

/** A key the service accepted, encrypted, and the workspace it belongs to. */
export interface SavedKey {
  workspaceId: string;
  workspaceName: string;
  apiKeyEnc: string;
  keyHint: string;
}

export class ConnectionStore {
  private readonly deliveredStatement: RawStatement<never>;

  constructor(private readonly db: Db) {
    this.deliveredStatement = prepare<never>(rawOf(db), 'worker_delivered', DELIVERED, { lazyCommit: true });
  }

  /** Connects the shop with a key the service accepted, or replaces its key: connected, checked now, no error. */
  save(shopId: string, key: SavedKey, at: Date): Promise<Connection> {
    const data = { status: 'connected', ...key, lastCheckedAt: at, lastError: null, lastErrorAt: null };
    return this.db.connection.upsert({ where: { shopId }, create: { shopId, connectedAt: at, ...data }, update: data });
  }

  /** Forgets the shop's key, in the caller's transaction (which holds what was queued). */
  async forget(tx: Prisma.TransactionClient, shopId: string): Promise<void> {
    await tx.connection.deleteMany({ where: { shopId } });
  }

  /**
   * A customers/redact erased the address `error` names: the page stops showing it, in the
   * caller's transaction, unless a newer error has replaced it meanwhile.
   */
  static async errorErased(tx: Prisma.TransactionClient, shopId: string, error: string): Promise<void> {
    await tx.connection.updateMany({ where: { shopId, lastError: error }, data: { lastError: null } });
  }

  /** The key under another encryption key, unless it changed since `from` was read; how many rows changed. */
  async reencrypt(shopId: string, from: string, to: string): Promise<number> {
    const res = await this.db.connection.updateMany({ where: { shopId, apiKeyEnc: from }, data: { apiKeyEnc: to } });
    return res.count;
  }

  /** The periodic key check looked at the shop's key: it comes round again after the interval. */
  async checked(shopId: string, at: Date): Promise<void> {
    await this.db.connection.updateMany({ where: { shopId }, data: { lastCheckedAt: at } });
  }

  /** The service refused the key: the connection is invalid_key, with the error, until a valid key is saved. */
  async keyRefused(shopId: string, error: string, at: Date): Promise<void> {
    await this.db.connection.updateMany({ where: { shopId }, data: { status: 'invalid_key', lastError: error, lastErrorAt: at } });
  }

  /** A delivery failed: the page shows its error until a later delivery clears it. */
  async failed(shopId: string, error: string, at: Date): Promise<void> {
    await this.db.connection.updateMany({ where: { shopId }, data: { lastError: error, lastErrorAt: at } });
  }

  /** The shops' last successful delivery, each [shop, time], in one statement (DELIVERED). */
  async delivered(shops: Array<[string, Date]>): Promise<void> {
    const provider = rawOf(this.db).provider;
    await this.deliveredStatement.run(dialectOf(provider).rowsParams(shops.map(([shopId, at]) => [shopId, rawTimestamp(provider, at)])));
  }
}
