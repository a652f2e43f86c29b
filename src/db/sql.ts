// Raw SQL through Prisma's tagged templates, for statements its query builder cannot express.
// Timestamps are epoch ms on SQLite (see db/client.ts) and timestamps on PostgreSQL, so their
// parameters differ by database (a statement run on the driver itself takes raw.ts's
// rawTimestamp instead); values read back go through raw.ts's rawDate.
import { Prisma } from '@prisma/client';
import type { Db, DbProvider } from './client';

export class Sql {
  constructor(
    readonly db: Db,
    readonly provider: DbProvider,
  ) {}

  /** A timestamp parameter in the provider's storage format. */
  ts(d: Date): Date | number {
    return this.provider === 'sqlite' ? d.getTime() : d;
  }

  /** An integer parameter, cast so arithmetic on it is integer arithmetic on both providers. */
  int(n: number): Prisma.Sql {
    return this.provider === 'postgres' ? Prisma.sql`CAST(${n} AS BIGINT)` : Prisma.sql`CAST(${n} AS INTEGER)`;
  }

  /** Placeholders come out in textual order for either provider (Prisma's tagged template). */
  query<T>(sql: Prisma.Sql): Promise<T[]> {
    return this.db.$queryRaw<T[]>(sql);
  }
}
