// What a backfill remembers between batches (the Backfill.progress JSON): which kind it is on,
// the bulk operation and its result URL, how far into the file it got (lines and bytes, always
// at the boundary of a root object), and counts per kind. Read tolerantly: an unreadable blob
// restarts the current kind, which the outbox's unique source ids make safe.
export const KINDS = ['customers', 'orders'] as const;
export type Kind = (typeof KINDS)[number];

/** States in which a backfill holds the shop's one import slot. */
export const ACTIVE_STATES = ['pending', 'running'] as const;

export interface KindCounts {
  /** Root objects in the result (rootObjectCount), or Shopify's count before the file exists. */
  total: number | null;
  /** Root objects read so far (including skipped ones). */
  processed: number;
  /** Messages this backfill added to the outbox (rows already there are not counted). */
  queued: number;
  /** Objects not sent: no email, or an order already sent live as order_placed. */
  skipped: number;
}

export interface Progress {
  /** The kind being imported; kinds before it in the backfill's list are done. */
  kind: Kind | null;
  done: Kind[];
  operationId: string | null;
  /**
   * When the current bulk operation was asked for: its data is at least that new, so its facts
   * about customers are dated then, and a live fact after it wins (mapping/profile.ts).
   */
  operationAt: string | null;
  url: string | null;
  /** Lines of the result file consumed, and the byte offset where the next root object starts. */
  line: number;
  byte: number;
  /** Bulk operations started for the current kind (a failed or expired one is re-run). */
  attempts: number;
  counts: Record<Kind, KindCounts>;
  /** A note for the merchant while the import waits (e.g. for a valid API key). */
  note?: string | null;
}

const emptyCounts = (): KindCounts => ({ total: null, processed: 0, queued: 0, skipped: 0 });

export function emptyProgress(): Progress {
  return {
    kind: null,
    done: [],
    operationId: null,
    operationAt: null,
    url: null,
    line: 0,
    byte: 0,
    attempts: 0,
    counts: { customers: emptyCounts(), orders: emptyCounts() },
  };
}

const isKind = (v: unknown): v is Kind => v === 'customers' || v === 'orders';
const nat = (v: unknown): number => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0);
const natOrNull = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null);
const strOrNull = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

export function parseProgress(json: string | null | undefined): Progress {
  const p = emptyProgress();
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(json ?? '{}') as Record<string, unknown>;
    if (typeof raw !== 'object' || raw === null) return p;
  } catch {
    return p;
  }
  p.kind = isKind(raw.kind) ? raw.kind : null;
  p.done = Array.isArray(raw.done) ? [...new Set(raw.done.filter(isKind))] : [];
  p.operationId = strOrNull(raw.operationId);
  const at = strOrNull(raw.operationAt);
  p.operationAt = at !== null && !Number.isNaN(Date.parse(at)) ? new Date(at).toISOString() : null;
  p.url = strOrNull(raw.url);
  p.line = nat(raw.line);
  p.byte = nat(raw.byte);
  p.attempts = nat(raw.attempts);
  p.note = strOrNull(raw.note);
  const counts = (raw.counts ?? {}) as Record<string, Record<string, unknown> | undefined>;
  for (const k of KINDS) {
    const c = counts[k] ?? {};
    p.counts[k] = { total: natOrNull(c.total), processed: nat(c.processed), queued: nat(c.queued), skipped: nat(c.skipped) };
  }
  return p;
}

export function parseKinds(json: string): Kind[] {
  try {
    const v = JSON.parse(json) as unknown;
    const kinds = Array.isArray(v) ? v.filter(isKind) : [];
    // customers first: contacts exist with their properties before their orders arrive
    return KINDS.filter((k) => kinds.includes(k));
  } catch {
    return [];
  }
}

/** The Backfill row's summary columns, derived from the progress. */
export function totals(p: Progress, kinds: Kind[]): { processed: number; queued: number; skipped: number; total: number | null } {
  let total: number | null = 0;
  let processed = 0;
  let queued = 0;
  let skipped = 0;
  for (const k of kinds) {
    const c = p.counts[k];
    processed += c.processed;
    queued += c.queued;
    skipped += c.skipped;
    total = total === null || c.total === null ? null : total + c.total;
  }
  return { processed, queued, skipped, total };
}

/** Starts (or restarts from the top) a kind: a new bulk operation will be run. */
export function resetKind(p: Progress, kind: Kind, keepAttempts = false): void {
  p.kind = kind;
  p.operationId = null;
  p.operationAt = null;
  p.url = null;
  p.line = 0;
  p.byte = 0;
  if (!keepAttempts) p.attempts = 0;
  p.counts[kind] = { ...p.counts[kind], processed: 0, skipped: 0 };
}
