// The delivery worker's knobs, each with its one default, resolved once when a worker is built.
// The configuration sets the lanes, the in-flight limit and the class policy (config.ts takes its
// defaults from here); tests shorten the timings.
import { DEFAULT_CLASS_POLICY, type ClassPolicy } from '../classes';

export interface WorkerTuning {
  /** Shops served at once by this process (WORKER_LANES). */
  lanes: number;
  /** Most messages claimed at once per shop; the batch is also capped at a quarter second of the limit. */
  batchSize: number;
  /** How often expired locks are swept. */
  sweepEveryMs: number;
  /** The slow safety poll: discovery runs at least this often, whatever the wake-ups say. */
  safetyPollMs: number;
  /** How often the queue of queues is reconciled with the outbox (a safety net; logs what it finds). */
  reconcileEveryMs: number;
  /** How long a lane keeps one shop while other shops wait for a lane. */
  laneQuantumMs: number;
  /**
   * A lane's lease on its shop, renewed by every later batch. It bounds how long the shops of a
   * process that died (SIGKILL, OOM) wait before another process serves them; a lease that runs
   * out under a lane still sending only lets a second lane claim beside it (claims are atomic and
   * pacing is shared, so nothing is sent twice or too fast).
   */
  leaseMs: number;
  /** Waits between attempts to record an outcome that failed to write. */
  recordRetryMs: readonly number[];
  /** Longest a claimed batch waits for the workspace's next send before it is given back. */
  maxSendWaitMs: number;
  /**
   * Requests a lane keeps in flight at most. The pacer spaces sends; this
   * bounds how many wait on a slow service at once, so a slow service gets no pile of requests
   * that would time out and be sent again. At the baseline 10/s a service would need 3.2 s a
   * request to fill 32.
   */
  maxInFlight: number;
  /** Floors and maximum ages of the delivery classes (DEFAULT_CLASS_POLICY by default). */
  classes: ClassPolicy;
}

export const DEFAULT_TUNING: Readonly<WorkerTuning> = {
  lanes: 32,
  batchSize: 50,
  sweepEveryMs: 5_000,
  safetyPollMs: 30_000,
  reconcileEveryMs: 300_000,
  laneQuantumMs: 5_000,
  leaseMs: 10_000,
  recordRetryMs: [200, 1000, 3000],
  maxSendWaitMs: 2_000,
  maxInFlight: 32,
  classes: DEFAULT_CLASS_POLICY,
};

/** The defaults, with what `set` gives (a field left undefined keeps its default). */
export function resolveTuning(set: Partial<WorkerTuning> = {}): WorkerTuning {
  const given = Object.fromEntries(Object.entries(set).filter(([, v]) => v !== undefined)) as Partial<WorkerTuning>;
  const t = { ...DEFAULT_TUNING, ...given };
  return { ...t, lanes: Math.max(1, t.lanes), maxInFlight: Math.max(1, t.maxInFlight) };
}
