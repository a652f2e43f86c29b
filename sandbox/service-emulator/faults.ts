// Fault injection: the next N matching requests, or all matching requests for a period.

/**
 * The service's own odd answers (statusNNN, success_false: JSON with the rate headers), and those
 * of something in front of it (proxy404, html200, redirect307: no JSON, no rate headers).
 */
export type FaultMode =
  | 'status500'
  | 'delay'
  | 'drop'
  | 'status429'
  | 'status403'
  | 'status401'
  | 'status400'
  | 'status406'
  | 'status404'
  | 'status408'
  | 'status425'
  | 'status503'
  | 'success_false'
  | 'proxy404'
  | 'html200'
  | 'redirect307';

export const FAULT_MODES: readonly FaultMode[] = [
  'status500',
  'delay',
  'drop',
  'status429',
  'status403',
  'status401',
  'status400',
  'status406',
  'status404',
  'status408',
  'status425',
  'status503',
  'success_false',
  'proxy404',
  'html200',
  'redirect307',
];

export interface FaultSpec {
  mode: FaultMode;
  /** How many matching requests it affects. Default 1 when forMs is not given either. */
  count?: number;
  /** Active for this long from injection. With count too, it ends at whichever comes first. */
  forMs?: number;
  /** For mode 'delay' (default 10 000 ms). */
  delayMs?: number;
  /** Only requests whose path contains this substring, e.g. '/webhook/send'. */
  path?: string;
  /** For mode 'redirect307': the Location (default http://127.0.0.1:9/moved). */
  location?: string;
}

interface ActiveFault {
  mode: FaultMode;
  remaining: number;
  until: number;
  delayMs: number;
  path?: string;
  location?: string;
}

export interface FaultHit {
  mode: FaultMode;
  delayMs: number;
  location?: string;
}

export class FaultBox {
  private faults: ActiveFault[] = [];

  inject(f: FaultSpec, now: number): void {
    if (!FAULT_MODES.includes(f.mode)) throw new Error(`unknown fault mode: ${String(f.mode)}`);
    const count = f.count ?? (f.forMs === undefined ? 1 : Number.POSITIVE_INFINITY);
    this.faults.push({
      mode: f.mode,
      remaining: count,
      until: f.forMs === undefined ? Number.POSITIVE_INFINITY : now + f.forMs,
      delayMs: f.delayMs ?? 10_000,
      ...(f.path ? { path: f.path } : {}),
      ...(f.location ? { location: f.location } : {}),
    });
  }

  /** The first active fault matching the path, consuming one of its uses. */
  take(path: string, now: number): FaultHit | undefined {
    if (this.faults.length === 0) return undefined;
    this.faults = this.faults.filter((f) => f.remaining > 0 && now < f.until);
    const f = this.faults.find((x) => x.path === undefined || path.includes(x.path));
    if (!f) return undefined;
    f.remaining -= 1;
    return { mode: f.mode, delayMs: f.delayMs, ...(f.location ? { location: f.location } : {}) };
  }

  list(now: number): ReadonlyArray<Readonly<ActiveFault>> {
    return this.faults.filter((f) => f.remaining > 0 && now < f.until);
  }

  clear(): void {
    this.faults = [];
  }
}
