// The service emulator in a process of its own, driven through its /_sandbox HTTP API: for tests
// that block the app's event loop, whose timing an in-process emulator would share (it could
// only see requests once the loop is free again, bunched, whatever the app did).
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';

export interface EmulatorProcess {
  url: string;
  createWorkspace(opts: { name: string; rateLimit?: number }): Promise<{ id: string; apiKey: string }>;
  requests(workspaceId: string): Promise<Array<{ path: string; status: number; at: number }>>;
  events(workspaceId: string): Promise<Array<{ event_name: string; event_attribute: Record<string, unknown> }>>;
  close(): Promise<void>;
}

const CHILD = `
  const { startServiceEmulator } = require(${JSON.stringify(path.resolve(__dirname, '..', '..', 'sandbox', 'service-emulator'))});
  startServiceEmulator({ host: '127.0.0.1' }).then((e) => console.log(JSON.stringify({ url: e.url })));
`;

export async function startEmulatorProcess(): Promise<EmulatorProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', '-e', CHILD], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the emulator process did not start in 20 s')), 20_000);
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        resolve((JSON.parse(line) as { url: string }).url);
        clearTimeout(timer);
      } catch {
        // not the ready line
      }
    });
  });
  const call = async <T>(method: string, route: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${url}/_sandbox${route}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return (await res.json()) as T;
  };
  return {
    url,
    async createWorkspace(o) {
      const ws = await call<{ workspace_id: string; api_key: string }>('POST', '/workspaces', { name: o.name, rate_limit: o.rateLimit });
      return { id: ws.workspace_id, apiKey: ws.api_key };
    },
    requests: async (ws) =>
      (await call<{ requests: Array<{ path: string; status: number; at: number }> }>('GET', `/requests?workspace_id=${ws}`)).requests,
    events: async (ws) =>
      (await call<{ events: Array<{ event_name: string; event_attribute: Record<string, unknown> }> }>('GET', `/events?workspace_id=${ws}`))
        .events,
    close: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
