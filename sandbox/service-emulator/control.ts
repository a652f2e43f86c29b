// The in-process control and inspection API (also served over HTTP under /_sandbox/).
import type { FaultBox, FaultSpec } from './faults';
import type {
  Contact,
  EmulatorCustomField,
  EmulatorKey,
  EmulatorList,
  EmulatorWorkspace,
  EventFilter,
  ReceivedEvent,
  RecordedRequest,
  Store,
} from './state';

export interface EmulatorControl {
  /** Creates a workspace (team) with a key named "default", returned as `apiKey`. */
  createWorkspace(input?: { id?: string; name?: string; rateLimit?: number }): EmulatorWorkspace;
  workspaces(): EmulatorWorkspace[];
  /** Returns the new key. */
  createKey(workspaceId: string, name?: string): string;
  /** Later requests with the key get 401. Throws for an unknown key. */
  revokeKey(key: string): void;
  keys(workspaceId: string): EmulatorKey[];
  setRateLimit(workspaceId: string, perSecond: number): void;
  setLists(workspaceId: string, lists: Array<{ id: string; name: string; contact_count?: number }>): void;
  setCustomFields(workspaceId: string, fields: EmulatorCustomField[]): void;
  /** Shops bound through endpoint 1, shop_id → shop_name. */
  shops(workspaceId: string): Record<string, string>;
  events(filter?: EventFilter): ReceivedEvent[];
  contacts(workspaceId?: string): Contact[];
  deletedContacts(workspaceId?: string): string[];
  requests(): RecordedRequest[];
  /** Real-time counts per event name (the service's hourly batching is not simulated). */
  eventCounts(workspaceId: string): Record<string, number>;
  /** Epoch ms until which the team is blocked (403), or null. */
  blockedUntil(workspaceId: string): number | null;
  injectFault(f: FaultSpec): void;
  clearFaults(): void;
  /** Faults still pending. */
  faults(): Array<{ mode: string; remaining: number; until: number; delayMs: number; path?: string }>;
  /** Clears events, contacts, requests, faults, rate windows and blocks; `all` also removes workspaces and keys. */
  reset(opts?: { all?: boolean }): void;
}

export function createControl(store: Store, faults: FaultBox): EmulatorControl {
  return {
    createWorkspace: (input) => store.createWorkspace(input),
    workspaces: () => [...store.workspaces.values()].map((d) => ({ ...d.ws })),
    createKey: (workspaceId, name) => store.createKey(workspaceId, name),
    revokeKey: (key) => {
      if (!store.revokeKey(key)) throw new Error('unknown API key');
    },
    keys: (workspaceId) => store.keysOf(workspaceId),
    setRateLimit: (workspaceId, perSecond) => store.setRateLimit(workspaceId, perSecond),
    setLists: (workspaceId, lists) => {
      store.data(workspaceId).lists = lists.map((l): EmulatorList => ({ contact_count: 0, ...l }));
    },
    setCustomFields: (workspaceId, fields) => {
      store.data(workspaceId).customFields = fields.map((f) => ({ ...f }));
    },
    shops: (workspaceId) => Object.fromEntries(store.data(workspaceId).shops),
    events: (filter) => store.listEvents(filter),
    contacts: (workspaceId) => store.listContacts(workspaceId),
    deletedContacts: (workspaceId) => store.listDeleted(workspaceId),
    requests: () => store.requests(),
    eventCounts: (workspaceId) => Object.fromEntries(store.data(workspaceId).eventCounts),
    blockedUntil: (workspaceId) => {
      const until = store.data(workspaceId).guard.blockedUntil;
      return until > Date.now() ? until : null;
    },
    injectFault: (f) => faults.inject(f, Date.now()),
    clearFaults: () => faults.clear(),
    faults: () => faults.list(Date.now()).map((f) => ({ ...f })),
    reset: (opts) => {
      faults.clear();
      store.reset(opts?.all ?? false);
    },
  };
}
