// Shopify sessions in our database, through the library's Prisma storage, with the access and
// refresh tokens optionally encrypted at rest.
import { Session } from '@shopify/shopify-api';
import { MissingSessionTableError, PrismaSessionStorage } from '@shopify/shopify-app-session-storage-prisma';
import type { Db } from '../../db/client';
import { LogOnce } from '../../observability/log-once';
import type { Logger } from '../../observability/logger';

/** What the app needs of a session storage (the library's SessionStorage interface). */
export interface SessionStore {
  storeSession(session: Session): Promise<boolean>;
  loadSession(id: string): Promise<Session | undefined>;
  deleteSession(id: string): Promise<boolean>;
  deleteSessions(ids: string[]): Promise<boolean>;
  findSessionsByShop(shop: string): Promise<Session[]>;
}

export interface SessionStoreOptions {
  /**
   * Encrypts a token before it is written; `decrypt` must undo it. Both or neither. `context` is
   * the session id (e.g. `offline_x.myshopify.com`), for ciphers that bind associated data.
   */
  encrypt?: (plain: string, context: string) => string;
  decrypt?: (stored: string, context: string) => string;
  logger?: Logger;
}

export function createSessionStore(db: Db, options: SessionStoreOptions = {}): SessionStore {
  if (Boolean(options.encrypt) !== Boolean(options.decrypt)) {
    throw new Error('session store: pass both encrypt and decrypt, or neither');
  }
  return new AppSessionStore(db, options);
}

class AppSessionStore implements SessionStore {
  private readonly inner: PrismaSessionStorage<Db>;
  /** An unreadable session is read on every Shopify call of its shop: logged once per interval. */
  private readonly logOnce?: LogOnce;

  constructor(
    db: Db,
    private readonly options: SessionStoreOptions,
  ) {
    // The library checks for the table at construction, retrying every 5 s, and keeps a
    // promise that rejects (unhandled) when the table is missing. Migrations run before the app
    // starts, so check once, quietly, and re-check on demand instead (see `run`).
    this.inner = new PrismaSessionStorage(db, { connectionRetries: 1, connectionRetryIntervalMs: 0 });
    if (options.logger) this.logOnce = new LogOnce(options.logger);
    (this.inner as unknown as { ready: Promise<boolean> }).ready.catch(() => undefined);
  }

  async storeSession(session: Session): Promise<boolean> {
    return this.run(() => this.inner.storeSession(this.sealed(session)));
  }

  async loadSession(id: string): Promise<Session | undefined> {
    const stored = await this.run(() => this.inner.loadSession(id));
    return stored && this.opened(stored);
  }

  async deleteSession(id: string): Promise<boolean> {
    return this.run(() => this.inner.deleteSession(id));
  }

  async deleteSessions(ids: string[]): Promise<boolean> {
    return this.run(() => this.inner.deleteSessions(ids));
  }

  async findSessionsByShop(shop: string): Promise<Session[]> {
    const stored = await this.run(() => this.inner.findSessionsByShop(shop));
    return stored.map((s) => this.opened(s)).filter((s): s is Session => s !== undefined);
  }

  /** Runs an operation; if the start-up table check had failed, checks again once and retries. */
  private async run<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      if (!(err instanceof MissingSessionTableError) && (err as Error)?.name !== 'MissingSessionStorageError') throw err;
      if (!(await this.inner.isReady())) {
        throw new Error('the Session table is missing from the database; apply the migrations');
      }
      return op();
    }
  }

  private sealed(session: Session): Session {
    const { encrypt } = this.options;
    if (!encrypt) return session;
    const o = session.toObject();
    return new Session({
      ...o,
      accessToken: o.accessToken ? encrypt(o.accessToken, session.id) : o.accessToken,
      refreshToken: o.refreshToken ? encrypt(o.refreshToken, session.id) : o.refreshToken,
    });
  }

  /** A session whose tokens cannot be decrypted counts as absent: token exchange renews it. */
  private opened(session: Session): Session | undefined {
    const { decrypt } = this.options;
    if (!decrypt) return session;
    try {
      const o = session.toObject();
      return new Session({
        ...o,
        accessToken: o.accessToken ? decrypt(o.accessToken, session.id) : o.accessToken,
        refreshToken: o.refreshToken ? decrypt(o.refreshToken, session.id) : o.refreshToken,
      });
    } catch (err) {
      this.logOnce?.log(
        'warn',
        session.id,
        { sessionId: session.id, err: (err as Error)?.name },
        'stored Shopify session could not be decrypted; it will be renewed',
      );
      return undefined;
    }
  }
}
