// The emulated service's data: workspaces (teams), named API keys, contacts, received events,
// lists and custom fields, and the request log. In memory only.
import { randomBytes } from 'node:crypto';
import { BadRequestGuard, SlidingWindow } from './limits';

export interface EmulatorWorkspace {
  id: string;
  name: string;
  rateLimit: number;
  createdAt: number;
  /** The key created with the workspace (named "default"). */
  apiKey: string;
}

export interface EmulatorKey {
  name: string;
  workspaceId: string;
  createdAt: number;
  revokedAt: number | null;
  /** The last four characters only. */
  hint: string;
}

export interface Contact {
  workspaceId: string;
  email: string;
  properties: Record<string, unknown>;
  createdAt: number;
  updatedAt: number;
}

export interface ReceivedEvent {
  workspaceId: string;
  event_name: string;
  email: string;
  event_attribute: Record<string, unknown>;
  contactProperties: Record<string, unknown>;
  receivedAt: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** Request headers; auth header values are masked, names kept. */
  headers: Record<string, string>;
  /** 0 when the connection was dropped by a fault. */
  status: number;
  at: number;
  durationMs: number;
  workspaceId: string | null;
  fault?: string;
}

export interface EmulatorList {
  id: string;
  name: string;
  contact_count: number;
}
export interface EmulatorCustomField {
  key: string;
  label: string;
  type: string;
}

export interface EventFilter {
  workspaceId?: string;
  email?: string;
  eventName?: string;
}

export interface WorkspaceData {
  ws: EmulatorWorkspace;
  window: SlidingWindow;
  guard: BadRequestGuard;
  contacts: Map<string, Contact>;
  deleted: string[];
  eventCounts: Map<string, number>;
  lists: EmulatorList[];
  customFields: EmulatorCustomField[];
  shops: Map<string, string>;
}

export interface StoreOptions {
  rateLimit: number;
  blockThreshold: number;
  blockWindowMs: number;
  blockMs: number;
  maxRecordedRequests: number;
}

function seedLists(wsId: string): EmulatorList[] {
  return [
    { id: `${wsId}-list-1`, name: 'Newsletter', contact_count: 0 },
    { id: `${wsId}-list-2`, name: 'VIP customers', contact_count: 0 },
  ];
}

function seedCustomFields(): EmulatorCustomField[] {
  return [
    { key: 'first_name', label: 'First name', type: 'text' },
    { key: 'last_name', label: 'Last name', type: 'text' },
    { key: 'birthday', label: 'Birthday', type: 'date' },
  ];
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

export class Store {
  readonly workspaces = new Map<string, WorkspaceData>();
  private readonly keys = new Map<string, EmulatorKey>();
  private events: ReceivedEvent[] = [];
  private log: RecordedRequest[] = [];
  private seq = 0;

  constructor(readonly opts: StoreOptions) {}

  createWorkspace(input: { id?: string; name?: string; rateLimit?: number } = {}): EmulatorWorkspace {
    this.seq += 1;
    const id = input.id ?? `ws_${this.seq}`;
    if (this.workspaces.has(id)) throw new Error(`workspace ${id} already exists`);
    const ws: EmulatorWorkspace = {
      id,
      name: input.name ?? `Workspace ${this.seq}`,
      rateLimit: input.rateLimit ?? this.opts.rateLimit,
      createdAt: Date.now(),
      apiKey: '',
    };
    this.workspaces.set(id, {
      ws,
      window: new SlidingWindow(1000),
      guard: new BadRequestGuard(this.opts.blockThreshold, this.opts.blockWindowMs, this.opts.blockMs),
      contacts: new Map(),
      deleted: [],
      eventCounts: new Map(),
      lists: seedLists(id),
      customFields: seedCustomFields(),
      shops: new Map(),
    });
    ws.apiKey = this.createKey(id, 'default');
    return { ...ws };
  }

  data(workspaceId: string): WorkspaceData {
    const d = this.workspaces.get(workspaceId);
    if (!d) throw new Error(`unknown workspace ${workspaceId}`);
    return d;
  }

  createKey(workspaceId: string, name = 'key'): string {
    this.data(workspaceId);
    const key = `sk_sandbox_${randomBytes(16).toString('hex')}`;
    this.keys.set(key, { name, workspaceId, createdAt: Date.now(), revokedAt: null, hint: key.slice(-4) });
    return key;
  }

  revokeKey(key: string): boolean {
    const k = this.keys.get(key);
    if (!k) return false;
    k.revokedAt ??= Date.now();
    return true;
  }

  /** The workspace of a live key, or undefined for unknown and revoked keys. */
  resolve(key: string | undefined): WorkspaceData | undefined {
    if (!key) return undefined;
    const k = this.keys.get(key);
    if (!k || k.revokedAt !== null) return undefined;
    return this.workspaces.get(k.workspaceId);
  }

  keysOf(workspaceId: string): EmulatorKey[] {
    return [...this.keys.values()].filter((k) => k.workspaceId === workspaceId).map((k) => ({ ...k }));
  }

  setRateLimit(workspaceId: string, perSecond: number): void {
    if (!Number.isFinite(perSecond) || perSecond < 0) throw new Error('rate limit must be a non-negative number');
    this.data(workspaceId).ws.rateLimit = Math.floor(perSecond);
  }

  addEvent(e: ReceivedEvent): void {
    this.events.push(e);
    const d = this.data(e.workspaceId);
    d.eventCounts.set(e.event_name, (d.eventCounts.get(e.event_name) ?? 0) + 1);
  }

  listEvents(f: EventFilter = {}): ReceivedEvent[] {
    const email = f.email === undefined ? undefined : normaliseEmail(f.email);
    return this.events.filter(
      (e) =>
        (f.workspaceId === undefined || e.workspaceId === f.workspaceId) &&
        (email === undefined || e.email === email) &&
        (f.eventName === undefined || e.event_name === f.eventName),
    );
  }

  upsertContact(d: WorkspaceData, email: string, props: Record<string, unknown>, now: number): Contact {
    let c = d.contacts.get(email);
    if (!c) {
      c = { workspaceId: d.ws.id, email, properties: {}, createdAt: now, updatedAt: now };
      d.contacts.set(email, c);
    }
    Object.assign(c.properties, props);
    c.updatedAt = now;
    return c;
  }

  listContacts(workspaceId?: string): Contact[] {
    const out: Contact[] = [];
    for (const d of this.workspaces.values()) {
      if (workspaceId !== undefined && d.ws.id !== workspaceId) continue;
      for (const c of d.contacts.values()) out.push({ ...c, properties: { ...c.properties } });
    }
    return out;
  }

  listDeleted(workspaceId?: string): string[] {
    const out: string[] = [];
    for (const d of this.workspaces.values()) if (workspaceId === undefined || d.ws.id === workspaceId) out.push(...d.deleted);
    return out;
  }

  record(r: RecordedRequest): void {
    this.log.push(r);
    if (this.log.length > this.opts.maxRecordedRequests * 2) this.log = this.log.slice(-this.opts.maxRecordedRequests);
  }

  requests(): RecordedRequest[] {
    return this.log.slice(-this.opts.maxRecordedRequests);
  }

  /** Clears received data and limits; `all` also forgets workspaces and keys. */
  reset(all = false): void {
    this.events = [];
    this.log = [];
    if (all) {
      this.workspaces.clear();
      this.keys.clear();
      this.seq = 0;
      return;
    }
    for (const d of this.workspaces.values()) {
      d.window.clear();
      d.guard.clear();
      d.contacts.clear();
      d.deleted = [];
      d.eventCounts.clear();
      d.shops.clear();
    }
  }
}
