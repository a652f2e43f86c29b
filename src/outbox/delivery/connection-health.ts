// The connection's health as delivery finds it: the last successful delivery, the last error, a
// key the service refused. Written through the connection store (connection-store.ts, the row's
// one writer). The "last successful delivery" is noted at most once a second per shop and written
// for every shop noted within DELIVERED_FLUSH_MS in one statement, so many shops' first orders at
// once cost one write, not one per shop. A success also clears the last error, so the page does
// not show a problem that is over.
import type { Logger } from '../../observability/logger';
import type { ConnectionStore } from '../connection-store';

/** How long a delivery's "last delivered" waits for others to share its write. */
const DELIVERED_FLUSH_MS = 200;

export class ConnectionHealth {
  private readonly lastDelivered = new Map<string, number>();
  private readonly pending = new Map<string, number>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly store: ConnectionStore,
    private readonly logger: Logger,
  ) {}

  /** A message of the shop was delivered at `at`. */
  delivered(shopId: string, at: Date): void {
    const prev = this.lastDelivered.get(shopId) ?? 0;
    if (at.getTime() - prev < 1000) return;
    this.lastDelivered.set(shopId, at.getTime());
    this.pending.set(shopId, at.getTime());
    this.timer ??= setTimeout(() => void this.flush(), DELIVERED_FLUSH_MS);
  }

  /** Writes the deliveries noted so far (at once: the worker is stopping). */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size === 0) return;
    const pending = [...this.pending];
    this.pending.clear();
    await this.store
      .delivered(pending.map(([shopId, at]) => [shopId, new Date(at)]))
      .catch((err: unknown) =>
        this.logger.warn({ shops: pending.length, err: (err as Error).message }, 'could not record the last delivery time'),
      );
  }

  /** A send failed: its error shows on the page until a later delivery clears it. */
  failed(shopId: string, error: string, at: Date): Promise<void> {
    return this.store.failed(shopId, error, at);
  }

  /** The service refused the shop's key. */
  keyRefused(shopId: string, error: string, at: Date): Promise<void> {
    return this.store.keyRefused(shopId, error, at);
  }
}
