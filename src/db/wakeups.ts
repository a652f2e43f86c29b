// Wake-ups between the parts of the pipeline: new receipts wake the stage-2 processor, new due
// messages wake the delivery worker. In one process they are direct calls. On PostgreSQL they
// also travel between processes with NOTIFY / LISTEN, so a web process and separate worker
// processes deliver with the latency of one process (graphile-worker's `jobs:insert` model).
// A wake-up lost on the way (a dropped listener connection) is covered by the worker's slow
// safety poll, and every reconnect wakes everyone once.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { rawOf, type Db } from './client';
import { Backoff, LOOP_BACKOFF } from '../lib/backoff';
import type { Logger } from '../observability/logger';

export type Channel = 'due' | 'receipts';
const PG_CHANNEL: Record<Channel, string> = { due: 'connector_due', receipts: 'connector_receipts' };

export interface Wakeups {
  /** After a commit: wake whoever waits on the channel, here and in other processes. */
  publish(channel: Channel): void;
  subscribe(channel: Channel, fn: () => void): void;
  /** Starts listening to other processes (worker roles only). */
  listen(): Promise<void>;
  /** Whether other processes hear of this process's work (NOTIFY); without it they must poll for it. */
  readonly reachesOtherProcesses: boolean;
  close(): Promise<void>;
}

export interface WakeupsOptions {
  logger: Logger;
  /** PostgreSQL: publish through this pool and listen on a connection of its own. */
  pg?: { pool: pg.Pool; connectionString: string };
  /** How soon a dropped listener first connects again; failures in a row wait longer (up to 30 s). */
  reconnectMs?: number;
  /**
   * Least time between two NOTIFYs of this process (default 5 ms). A publish after a quiet spell
   * notifies at once; those within this time of the last NOTIFY go as one at its end, so a
   * stream of commits costs other processes a wake-up every few ms, not one per commit.
   */
  notifyGapMs?: number;
}

/** The wake-ups of a client's database: NOTIFY / LISTEN between processes on PostgreSQL, in process on SQLite. */
export function wakeupsOf(db: Db, connectionString: string, opts: Omit<WakeupsOptions, 'pg'>): Wakeups {
  const raw = rawOf(db);
  return createWakeups({ ...opts, pg: raw.provider === 'postgres' ? { pool: raw.lazy, connectionString } : undefined });
}

export function createWakeups(opts: WakeupsOptions): Wakeups {
  const subscribers: Record<Channel, Array<() => void>> = { due: [], receipts: [] };
  const fire = (channel: Channel) => {
    for (const fn of subscribers[channel]) fn();
  };
  let listener: pg.Client | null = null;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  // NOTIFYs coalesced: a burst of commits sends one per channel (see notifyGapMs)
  const pending = new Set<Channel>();
  const gapMs = opts.notifyGapMs ?? 5;
  let lastNotify = 0;
  let notifyTimer: NodeJS.Timeout | undefined;
  let scheduled = false;
  /** This process, as the payload of its NOTIFYs. */
  const self = randomUUID();
  const backoff = new Backoff<string>({ ...LOOP_BACKOFF, baseMs: opts.reconnectMs ?? LOOP_BACKOFF.baseMs });
  const retryLater = () => {
    retry = setTimeout(() => void start(), backoff.fail('listen'));
  };

  const flush = () => {
    scheduled = false;
    notifyTimer = undefined;
    lastNotify = Date.now();
    const channels = [...pending];
    pending.clear();
    for (const channel of channels) {
      opts
        .pg!.pool.query('SELECT pg_notify($1, $2)', [PG_CHANNEL[channel], self])
        .catch((err: unknown) =>
          opts.logger.warn(
            { err: (err as Error).message, channel },
            'could not notify other processes; their safety poll will find the work',
          ),
        );
    }
  };

  async function connect(): Promise<void> {
    const p = opts.pg!;
    const client = new pg.Client({ connectionString: p.connectionString });
    client.on('notification', (n) => {
      // our own NOTIFY comes back too: publish() already woke this process
      if (n.payload === self) return;
      const channel = (Object.keys(PG_CHANNEL) as Channel[]).find((c) => PG_CHANNEL[c] === n.channel);
      if (channel) fire(channel);
    });
    const reconnect = (why: string) => {
      if (closed || listener !== client) return;
      listener = null;
      opts.logger.warn({ why }, 'wake-up listener lost its connection; reconnecting');
      client.end().catch(() => undefined);
      retryLater();
    };
    client.on('error', (err) => reconnect(err.message));
    client.on('end', () => reconnect('connection ended'));
    await client.connect();
    await client.query(`LISTEN ${PG_CHANNEL.due}; LISTEN ${PG_CHANNEL.receipts}`);
    listener = client;
  }

  async function start(): Promise<void> {
    if (closed) return;
    try {
      await connect();
      backoff.succeed('listen');
      // anything published while we were not listening
      fire('receipts');
      fire('due');
    } catch (err) {
      // logged when an outage starts and then at growing intervals, as the retries grow
      if (backoff.failures('listen') % 5 === 0)
        opts.logger.warn(
          { err: (err as Error).message, failures: backoff.failures('listen') + 1 },
          'wake-up listener could not connect; retrying after a growing wait',
        );
      retryLater();
    }
  }

  return {
    reachesOtherProcesses: Boolean(opts.pg),
    publish(channel) {
      fire(channel);
      if (!opts.pg || closed) return;
      pending.add(channel);
      if (scheduled) return;
      scheduled = true;
      const wait = lastNotify + gapMs - Date.now();
      if (wait <= 0) process.nextTick(flush);
      else notifyTimer = setTimeout(flush, wait);
    },
    subscribe(channel, fn) {
      subscribers[channel].push(fn);
    },
    async listen() {
      if (opts.pg && !listener) await start();
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      // a NOTIFY still waiting for its gap goes now: other processes should not wait for their poll
      if (notifyTimer) {
        clearTimeout(notifyTimer);
        flush();
      }
      const l = listener;
      listener = null;
      await l?.end().catch(() => undefined);
    },
  };
}
