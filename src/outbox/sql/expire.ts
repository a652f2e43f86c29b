// Expiry's SQL: a shop's stale backlog of one class, expired unsent in one statement.
import { Prisma } from '@prisma/client';
import type { Sql } from '../../db/sql';
import type { ClassIndex } from '../classes';

/**
 * Every due message of the shop's class `cls` that became due before `cutoff`: expired, with
 * `reason` as its last error. Returns the event name of each.
 */
export const EXPIRE_STALE = (sql: Sql, shopId: string, cls: ClassIndex, cutoff: Date, now: Date, reason: string): Prisma.Sql => Prisma.sql`
      UPDATE "OutboxMessage" SET "status" = 'expired', "lastError" = ${reason}, "updatedAt" = ${sql.ts(now)}
      WHERE "status" = 'queued' AND "shopId" = ${shopId} AND "deliveryClass" = ${sql.int(cls)} AND "runAt" <= ${sql.ts(now)} AND "dueAt" < ${sql.ts(cutoff)}
      RETURNING "eventName"`;
