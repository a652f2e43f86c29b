// What the workspace's budget was spent on, per shop, hour and event: every request sent to the
// service counts one send, every message expired unsent one expiry. A worker counts in memory and
// writes every few seconds, one statement for all it counted (an upsert that adds), so a send
// costs no write of its own; a crash loses at most those seconds of counts, never a message.
// Rows older than the retention are deleted by the worker's housekeeping.
import { Prisma } from '@prisma/client';
import { rawOf, type Db } from '../db/client';
import type { ClassIndex } from './classes';
import { Sql } from '../db/sql';

const HOUR_MS = 3_600_000;
/** How long hourly counts are kept: the admin page shows the last 7 days. */
export const USAGE_RETENTION_MS = 8 * 24 * HOUR_MS;

interface Counts {
  shopId: string;
  hour: number;
  eventName: string;
  deliveryClass: ClassIndex;
  sends: number;
  expired: number;
  /** Failed writes of these counts so far. */
  tries?: number;
}

export class UsageStats {
  private readonly sql: Sql;
  private pending = new Map<string, Counts>();
  private timer?: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    db: Db,
    private readonly opts: { flushEveryMs?: number; onError?: (err: Error) => void } = {},
  ) {
    this.sql = new Sql(db, rawOf(db).provider);
  }

  /** Counts `sends` requests and `expired` expiries of an event at `at`. */
  add(shopId: string, eventName: string, deliveryClass: ClassIndex, at: Date, n: { sends?: number; expired?: number }): void {
    const hour = Math.floor(at.getTime() / HOUR_MS) * HOUR_MS;
    const key = `${shopId}\u0000${hour}\u0000${eventName}`;
    let c = this.pending.get(key);
    if (!c) this.pending.set(key, (c = { shopId, hour, eventName, deliveryClass, sends: 0, expired: 0 }));
    c.sends += n.sends ?? 0;
    c.expired += n.expired ?? 0;
    this.timer ??= setTimeout(() => void this.flush(), this.opts.flushEveryMs ?? 5_000);
    this.timer.unref?.();
  }

  /**
   * Writes what was counted. Counts that fail to write are added back for the next flush, twice at
   * most (a shop erased meanwhile would fail every write): they are statistics, not messages.
   */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    if (batch.length === 0) return this.flushing;
    this.flushing = this.flushing
      .then(() => this.write(batch))
      .catch((err: unknown) => {
        for (const c of batch) if ((c.tries ?? 0) < 2) this.readd(c);
        this.opts.onError?.(err as Error);
      });
    return this.flushing;
  }

  private readd(c: Counts): void {
    this.add(c.shopId, c.eventName, c.deliveryClass, new Date(c.hour), c);
    const again = this.pending.get(`${c.shopId}\u0000${c.hour}\u0000${c.eventName}`)!;
    again.tries = Math.max(again.tries ?? 0, (c.tries ?? 0) + 1);
  }

  private async write(batch: Counts[]): Promise<void> {
    const values = batch.map(
      (c) =>
        Prisma.sql`(${c.shopId}, ${this.sql.ts(new Date(c.hour))}, ${c.eventName}, ${this.sql.int(c.deliveryClass)}, ${this.sql.int(c.sends)}, ${this.sql.int(c.expired)})`,
    );
    await this.sql.db.$executeRaw(Prisma.sql`
      INSERT INTO "DeliveryUsage" ("shopId", "hour", "eventName", "deliveryClass", "sends", "expired") VALUES ${Prisma.join(values)}
      ON CONFLICT ("shopId", "hour", "eventName") DO UPDATE SET
        "sends" = "DeliveryUsage"."sends" + excluded."sends", "expired" = "DeliveryUsage"."expired" + excluded."expired"`);
  }

  /** Deletes counts older than the retention; returns how many rows. */
  async prune(now: Date): Promise<number> {
    const res = await this.sql.db.deliveryUsage.deleteMany({ where: { hour: { lt: new Date(now.getTime() - USAGE_RETENTION_MS) } } });
    return res.count;
  }
}
