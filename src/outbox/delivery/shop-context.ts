// A lane's start: the shop, its connection and its workspace's pacing, or the reason its messages
// must wait. On PostgreSQL the pass's lease reads it for every shop it leased (LEASE_CONTEXT), in
// the lease's own statement; on SQLite each lane reads its own (CONTEXT), in process. A saved key
// is decrypted once and kept while the saved value stays the same.
import { DecryptError, type SecretBox } from '../../crypto/secret-box';
import { rawOf, type Db } from '../../db/client';
import { prepare, rawDate, type RawStatement, type StatementBuilder } from '../../db/raw';
import type { LogOnce } from '../../observability/log-once';
import type { Metrics } from '../../observability/metrics';
import type { Usage } from '../classes';
import type { LeaseRead } from '../due';
import type { HeldReason } from '../message';
import { DEFAULT_LIMIT, type Pacer } from '../pacer';

export interface Pacing {
  limit: number;
  pausedUntil: Date | null;
  /** The workspace's recent sends per class (classes.ts). */
  usage: Usage;
}

/**
 * What a lane finds of its shop: ready to send with the workspace's key (`pacing` as the lane
 * began; each later batch reads it again), held (its messages wait, for `reason`), or gone (the
 * shop was deleted: nothing to do).
 */
export type ShopContext =
  { kind: 'ready'; workspaceId: string; apiKey: string; pacing: Pacing } | { kind: 'hold'; reason: HeldReason } | { kind: 'gone' };
export type ReadyShop = Extract<ShopContext, { kind: 'ready' }>;

export interface ContextRow {
  /** The shop's id; null when the shop is gone. */
  shop: string | null;
  uninstalledAt: unknown;
  status: string | null;
  workspaceId: string | null;
  apiKeyEnc: string | null;
  limitPerSec: number | null;
  pausedUntil: unknown;
  usageCritical: number | null;
  usageTriggers: number | null;
  usageBehaviour: number | null;
  usageHistory: number | null;
}

const CONTEXT_COLUMNS = `"s"."id" AS "shop", "s"."uninstalledAt", "c"."status", "c"."workspaceId", "c"."apiKeyEnc", "w"."limitPerSec", "w"."pausedUntil",
  "w"."usageCritical", "w"."usageTriggers", "w"."usageBehaviour", "w"."usageHistory"`;
const CONTEXT_JOINS = `
  LEFT JOIN "Connection" AS "c" ON "c"."shopId" = "s"."id"
  LEFT JOIN "WorkspacePacer" AS "w" ON "w"."workspaceId" = "c"."workspaceId"`;
const CONTEXT: StatementBuilder = (p) => `SELECT ${CONTEXT_COLUMNS} FROM "Shop" AS "s" ${CONTEXT_JOINS} WHERE "s"."id" = ${p(1)}`;
export const LEASE_CONTEXT: LeaseRead = {
  name: 'due_lease_context',
  select: (leased) =>
    `SELECT "l"."shopId", ${CONTEXT_COLUMNS} FROM ${leased} AS "l" LEFT JOIN "Shop" AS "s" ON "s"."id" = "l"."shopId" ${CONTEXT_JOINS}`,
};

export interface ShopContextDeps {
  /** The database: the context is read from it, and the worker's stores write to it. */
  db: Db;
  secrets: SecretBox;
  pacer: Pacer;
  metrics: Metrics;
}

export class ShopContexts {
  private readonly statement: RawStatement<ContextRow>;
  private readonly keyCache = new Map<string, { enc: string; key: string }>();

  constructor(
    private readonly deps: ShopContextDeps,
    private readonly logOnce: LogOnce,
    private readonly now: () => Date,
  ) {
    this.statement = prepare<ContextRow>(rawOf(deps.db), 'worker_context', CONTEXT);
  }

  /** The shop's connection and its workspace's pacing, or the reason its messages must wait: the lease's row, or one read. */
  async read(shopId: string, leased?: ContextRow): Promise<ShopContext> {
    const row = leased ?? (await this.statement.run([shopId]))[0];
    if (!row || row.shop === null) return { kind: 'gone' };
    if (row.uninstalledAt !== null) return { kind: 'hold', reason: 'uninstalled' };
    if (row.status === null || row.workspaceId === null || row.apiKeyEnc === null) return { kind: 'hold', reason: 'disconnected' };
    if (row.status !== 'connected') return { kind: 'hold', reason: 'invalid_key' };
    let cached = this.keyCache.get(shopId);
    if (!cached || cached.enc !== row.apiKeyEnc) {
      try {
        cached = { enc: row.apiKeyEnc, key: this.deps.secrets.decrypt(row.apiKeyEnc, shopId) };
      } catch (err) {
        if (!(err instanceof DecryptError)) throw err;
        // a state of this shop, not a fault of the process: its deliveries wait for a key
        // that reads (a restart with the old key among the previous ones, or a new key saved)
        this.logOnce.log(
          'error',
          `key:${shopId}`,
          { shopId, err: err.message },
          'the shop’s API key cannot be decrypted with any configured key; its deliveries are held (key_unreadable)',
        );
        this.deps.metrics.keyUnreadable.inc();
        return { kind: 'hold', reason: 'key_unreadable' };
      }
      this.logOnce.clear(`key:${shopId}`);
      this.keyCache.set(shopId, cached);
    }
    const until = rawDate(row.pausedUntil);
    if (row.limitPerSec !== null) this.deps.pacer.knownRow(row.workspaceId, Number(row.limitPerSec));
    return {
      kind: 'ready',
      workspaceId: row.workspaceId,
      apiKey: cached.key,
      pacing: {
        limit: row.limitPerSec === null ? DEFAULT_LIMIT : Number(row.limitPerSec),
        pausedUntil: until && until.getTime() > this.now().getTime() ? until : null,
        usage: [
          Number(row.usageCritical ?? 0),
          Number(row.usageTriggers ?? 0),
          Number(row.usageBehaviour ?? 0),
          Number(row.usageHistory ?? 0),
        ],
      },
    };
  }
}
