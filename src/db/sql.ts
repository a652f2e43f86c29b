// Raw SQL that Prisma cannot express, one statement per provider. Timestamps are epoch ms on
// SQLite (see db/client.ts) and timestamptz on PostgreSQL, so parameters differ by provider.
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

  /** A timestamp column value read back from raw SQL. */
  static toDate(v: unknown): Date | null {
    if (v === null || v === undefined) return null;
    if (v instanceof Date) return v;
    if (typeof v === 'bigint') return new Date(Number(v));
    if (typeof v === 'number') return new Date(v);
    return new Date(String(v));
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
