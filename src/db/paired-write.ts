// A write fenced on one row, and a second write that belongs with it, made atomically: the second
// happens only when the first changed its row (an outcome recorded by the process that claimed the
// message, and its attempt). PostgreSQL: one statement that does both (`combined`, a per-row WITH),
// the calls of concurrent callers made together (Coalescer, one round trip under load); SQLite: a
// transaction of `first` and then, when it hit, `second`, in process under the one write lock.
import { rawOf, type Db } from './client';
import { Coalescer } from './group-commit';
import { compileSqlite, execCompiled, prepare, runRows, type StatementBuilder } from './raw';

export interface PairedWrite {
  /** The first write alone (SQLite). */
  first: StatementBuilder;
  /** The second write, with the same parameters (SQLite). */
  second: StatementBuilder;
  /** Both, as one per-row statement returning one row per hit, with `hit` naming its key (PostgreSQL). */
  combined: StatementBuilder;
  /** The returned column that holds a hit's key. */
  hit: string;
  /** The key of a call: its row; calls with one key are never combined. */
  key: (params: unknown[]) => string;
}

/** Returns a function that makes the pair for one set of parameters and says whether the first hit. */
export function pairedWrite(db: Db, name: string, w: PairedWrite): (params: unknown[]) => Promise<boolean> {
  const raw = rawOf(db);
  if (raw.provider === 'postgres') {
    const statement = prepare<Record<string, unknown>>(raw, name, w.combined);
    const coalescer = new Coalescer<unknown[], boolean>({
      key: w.key,
      run: async (rows) => {
        const hits = new Set((await runRows(statement, 'postgres', rows)).map((r) => String(r[w.hit])));
        return rows.map((params) => hits.has(w.key(params)));
      },
    });
    return (params) => coalescer.call(params);
  }
  const first = compileSqlite(w.first);
  const second = compileSqlite(w.second);
  return (params) =>
    raw.exclusive((conn) =>
      conn.transaction(() => {
        const hit = execCompiled(conn, `${name}_first`, first, params).changes === 1;
        if (hit) execCompiled(conn, `${name}_second`, second, params);
        return hit;
      })(),
    );
}
