// An in-process emulator of the email marketing service (../../shared/spec/service-api.md),
// for tests, benchmarks and `npm run dev`. It shares no code with src/integrations/service/ on purpose:
// the client and the emulator check each other. Behaviour chosen for what the spec leaves
// "not shown" is listed in docs/service-emulator.md.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../src/observability/logger';
import { createControl, type EmulatorControl } from './service-emulator/control';
import { FaultBox } from './service-emulator/faults';
import { sendJson } from './service-emulator/http-util';
import { handleServiceRequest, type Core } from './service-emulator/pipeline';
import { handleSandboxRequest } from './service-emulator/sandbox-api';
import { Store } from './service-emulator/state';

export type { EmulatorControl } from './service-emulator/control';
export type { FaultMode, FaultSpec } from './service-emulator/faults';
export type {
  Contact,
  EmulatorCustomField,
  EmulatorKey,
  EmulatorList,
  EmulatorWorkspace,
  EventFilter,
  ReceivedEvent,
  RecordedRequest,
} from './service-emulator/state';

export interface ServiceEmulatorOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /** Requests per second per team for new workspaces, and the limit reported when no team is known. Default 10. */
  rateLimit?: number;
  /** Bad requests (400) from one team within blockWindowMs that trigger a 403 block. Default 10; 0 disables. */
  blockThreshold?: number;
  /** Window in which bad requests are counted. Default 60 000. */
  blockWindowMs?: number;
  /** How long a block lasts. Default 60 000. */
  blockMs?: number;
  /** How many requests requests() keeps (oldest dropped). Default 10 000. */
  maxRecordedRequests?: number;
  logger?: Logger;
}

export interface ServiceEmulator extends EmulatorControl {
  /** Base URL without trailing slash; serves as both {base_url} and {webhook_url}. */
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function startServiceEmulator(opts: ServiceEmulatorOptions = {}): Promise<ServiceEmulator> {
  const store = new Store({
    rateLimit: opts.rateLimit ?? 10,
    blockThreshold: opts.blockThreshold ?? 10,
    blockWindowMs: opts.blockWindowMs ?? 60_000,
    blockMs: opts.blockMs ?? 60_000,
    maxRecordedRequests: opts.maxRecordedRequests ?? 10_000,
  });
  const faults = new FaultBox();
  const control = createControl(store, faults);
  const sleepers = new Set<{ timer: NodeJS.Timeout; done: (completed: boolean) => void }>();
  let closing = false;

  const core: Core = {
    store,
    faults,
    defaultRateLimit: store.opts.rateLimit,
    logger: opts.logger,
    sleep: (ms) =>
      new Promise<boolean>((resolve) => {
        if (closing) return resolve(false);
        const entry = {
          timer: setTimeout(() => {
            sleepers.delete(entry);
            resolve(true);
          }, ms),
          done: resolve,
        };
        sleepers.add(entry);
      }),
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://emulator.local');
    const path = url.pathname;
    const work =
      path === '/_sandbox' || path.startsWith('/_sandbox/')
        ? handleSandboxRequest(control, req, res, path, url.searchParams)
        : handleServiceRequest(core, req, res, path);
    work.catch((err: unknown) => {
      opts.logger?.error({ err }, 'service emulator failed to handle a request');
      sendJson(res, 500, { detail: 'Emulator error.' });
    });
  });
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host ?? '127.0.0.1';
  const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;

  return {
    ...control,
    url: `http://${shownHost}:${port}`,
    port,
    close: async () => {
      if (closing) return;
      closing = true;
      for (const s of sleepers) {
        clearTimeout(s.timer);
        s.done(false);
      }
      sleepers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
