// The stored secrets (service API keys, Shopify access and refresh tokens) against the
// configured encryption keys. At start a process reads every one, once:
// - those no configured key decrypts are counted and named in one log line: their shops show
//   key_unreadable and hold their deliveries, and nothing else is touched;
// - a shop whose key reads again (a restart with the old key in ENCRYPTION_KEYS_PREVIOUS) has its
//   key_unreadable deliveries queued again at once, each sent once like any queued message;
// - those under a previous key are re-encrypted under the current one, a chunk at a time and only
//   where the row still holds what was read, so a rotation finishes by itself and the old key can
//   then be removed (the last log line says how many remain: 0).
import type { Connection, Session } from '@prisma/client';
import { DecryptError, type SecretBox } from '../crypto/secret-box';
import type { Db } from '../db/client';
import { turnOfTheLoop } from '../db/raw';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { ConnectionStore } from '../outbox/connection-store';
import type { OutboxRepository } from '../outbox/repository';

export interface StoredKeysDeps {
  db: Db;
  secrets: SecretBox;
  repo: OutboxRepository;
  logger: Logger;
  metrics?: Metrics;
  now?: () => Date;
  /** A shop's held deliveries were queued again: index them as due. */
  onResumed?: (shopId: string) => void;
  /** Rows read per statement. */
  chunk?: number;
}

type KeyState = 'current' | 'previous' | 'unreadable';

export interface KeyScan {
  connections: Record<KeyState, number>;
  sessions: Record<KeyState, number>;
  /** Domains of the shops with a secret no configured key decrypts. */
  unreadableShops: string[];
  /** Shops whose key_unreadable deliveries were queued again. */
  resumedShops: number;
  /** Secrets moved from a previous key to the current one. */
  reencrypted: number;
}

const empty = (): Record<KeyState, number> => ({ current: 0, previous: 0, unreadable: 0 });

export function createStoredKeys(deps: StoredKeysDeps) {
  const { db, secrets, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const chunk = Math.max(1, deps.chunk ?? 200);
  const connectionStore = new ConnectionStore(db);

  /** The plain value and whether it is under the current key; null when nothing decrypts it. */
  function open(envelope: string, context: string): { plain: string; current: boolean } | null {
    try {
      return { plain: secrets.decrypt(envelope, context), current: !secrets.needsRotation(envelope) };
    } catch (err) {
      if (err instanceof DecryptError) return null;
      throw err;
    }
  }

  async function connections(scan: KeyScan): Promise<void> {
    // the shops with deliveries held for an unreadable key: few, found through the status index
    const held = new Set(
      (
        await db.outboxMessage.findMany({
          where: { status: 'held', heldReason: 'key_unreadable' },
          distinct: ['shopId'],
          select: { shopId: true },
        })
      ).map((m) => m.shopId),
    );
    let after = '';
    for (;;) {
      const rows: Array<Connection & { shop: { domain: string } }> = await db.connection.findMany({
        where: { shopId: { gt: after } },
        orderBy: { shopId: 'asc' },
        take: chunk,
        include: { shop: { select: { domain: true } } },
      });
      for (const c of rows) {
        const opened = open(c.apiKeyEnc, c.shopId);
        if (!opened) {
          scan.connections.unreadable += 1;
          scan.unreadableShops.push(c.shop.domain);
          continue;
        }
        scan.connections[opened.current ? 'current' : 'previous'] += 1;
        if (!opened.current) {
          scan.reencrypted += await connectionStore.reencrypt(c.shopId, c.apiKeyEnc, secrets.encrypt(opened.plain, c.shopId));
        }
        if (!held.has(c.shopId)) continue;
        const resumed = await deps.repo.resumeShop(c.shopId, ['key_unreadable'], now());
        if (resumed > 0) {
          scan.resumedShops += 1;
          deps.onResumed?.(c.shopId);
        }
      }
      if (rows.length < chunk) return;
      after = rows[rows.length - 1]!.shopId;
      await turnOfTheLoop();
    }
  }

  async function sessions(scan: KeyScan): Promise<void> {
    let after = '';
    for (;;) {
      const rows: Session[] = await db.session.findMany({ where: { id: { gt: after } }, orderBy: { id: 'asc' }, take: chunk });
      for (const s of rows) {
        const access = open(s.accessToken, s.id);
        const refresh = s.refreshToken ? open(s.refreshToken, s.id) : undefined;
        if (!access || refresh === null) {
          // counted as absent by the session store: the next token exchange replaces it
          scan.sessions.unreadable += 1;
          if (!scan.unreadableShops.includes(s.shop)) scan.unreadableShops.push(s.shop);
          continue;
        }
        const current = access.current && (refresh === undefined || refresh.current);
        scan.sessions[current ? 'current' : 'previous'] += 1;
        if (current) continue;
        const res = await db.session.updateMany({
          where: { id: s.id, accessToken: s.accessToken, refreshToken: s.refreshToken },
          data: {
            accessToken: secrets.encrypt(access.plain, s.id),
            ...(refresh ? { refreshToken: secrets.encrypt(refresh.plain, s.id) } : {}),
          },
        });
        scan.reencrypted += res.count;
      }
      if (rows.length < chunk) return;
      after = rows[rows.length - 1]!.id;
      await turnOfTheLoop();
    }
  }

  return {
    /** Reads every stored secret once: counts, names the unreadable, resumes and re-encrypts. */
    async scan(): Promise<KeyScan> {
      const scan: KeyScan = { connections: empty(), sessions: empty(), unreadableShops: [], resumedShops: 0, reencrypted: 0 };
      await connections(scan);
      await sessions(scan);
      const unreadable = scan.connections.unreadable + scan.sessions.unreadable;
      const remaining = scan.connections.previous + scan.sessions.previous - scan.reencrypted;
      const current = scan.connections.current + scan.sessions.current + scan.reencrypted;
      deps.metrics?.storedSecrets.set({ key: 'current' }, current);
      deps.metrics?.storedSecrets.set({ key: 'previous' }, remaining);
      deps.metrics?.storedSecrets.set({ key: 'unreadable' }, unreadable);
      if (unreadable > 0) {
        logger.error(
          {
            connections: scan.connections.unreadable,
            sessions: scan.sessions.unreadable,
            shops: scan.unreadableShops.slice(0, 100),
            more: Math.max(0, scan.unreadableShops.length - 100),
          },
          'stored secrets that no configured encryption key decrypts: these shops show key_unreadable and their deliveries are held; put the old key in ENCRYPTION_KEYS_PREVIOUS, or have the merchants paste their API keys again',
        );
      }
      logger.info(
        { current, reencrypted: scan.reencrypted, remainingUnderPreviousKeys: remaining, unreadable, resumedShops: scan.resumedShops },
        remaining === 0
          ? 'stored secrets checked: none is left under a previous key'
          : 'stored secrets checked: some are still under a previous key',
      );
      return scan;
    },
  };
}

export type StoredKeys = ReturnType<typeof createStoredKeys>;
