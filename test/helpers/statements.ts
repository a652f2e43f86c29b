// Counts the SQL statements this process sends, at the drivers (pg's Client.query, better-sqlite3's
// Statement methods), as bench/count-queries.cjs does for child processes: what a database sees,
// whatever layer sent it.
import Database from 'better-sqlite3';
import pg from 'pg';

export interface StatementCounter {
  /** Statements sent since the counter started whose SQL `match` accepted. */
  count(): number;
  restore(): void;
}

export function countStatements(match: (sql: string) => boolean): StatementCounter {
  let n = 0;
  const seen = (sql: unknown) => {
    const text =
      typeof sql === 'string'
        ? sql
        : typeof sql === 'object' && sql !== null && 'text' in sql
          ? String((sql as { text: unknown }).text)
          : '';
    if (match(text)) n += 1;
  };
  const restores: Array<() => void> = [];

  const clientProto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = clientProto.query;
  clientProto.query = function (this: unknown, ...args: unknown[]) {
    seen(args[0]);
    return query.apply(this, args);
  };
  restores.push(() => (clientProto.query = query));

  const probe = new Database(':memory:');
  const statementProto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, (...args: unknown[]) => unknown>;
  probe.close();
  for (const m of ['run', 'get', 'all', 'iterate']) {
    const fn = statementProto[m]!;
    statementProto[m] = function (this: { source: string }, ...args: unknown[]) {
      seen(this.source);
      return fn.apply(this, args);
    };
    restores.push(() => (statementProto[m] = fn));
  }
  return { count: () => n, restore: () => restores.forEach((r) => r()) };
}
