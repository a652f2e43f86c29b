// `npm run dev` (sandbox/dev.ts) as its own process: it mints session tokens for any shop, so it runs
// only on the sandbox's published values and listens on the loopback interface alone.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase, testProvider, type TestDatabase } from '../helpers/db';

const ROOT = path.resolve(__dirname, '..', '..');
const DEV = path.join(ROOT, 'sandbox', 'dev.ts');
const REAL_KEY = Buffer.alloc(32, 42).toString('base64');

/**
 * An environment that keeps the dev entry off its fixed ports should it start: a free app port,
 * no emulator (the service URL is not the sandbox's) and no simulated shop (an admin origin is
 * given), and a throwaway database.
 */
function devEnv(extra: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    PORT: '0',
    LOG_LEVEL: 'info',
    DATABASE_URL: `file:${path.join(os.tmpdir(), `dev-entry-${process.pid}.db`)}`,
    SERVICE_BASE_URL: 'http://127.0.0.1:9',
    SHOPIFY_ADMIN_ORIGIN: 'http://127.0.0.1:9',
    ...extra,
  };
}

function runDev(env: Record<string, string>) {
  // SIGKILL at the deadline: a dev entry that does start is never left running behind the test
  return spawnSync(process.execPath, ['--import', 'tsx', DEV], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    timeout: 20_000,
    killSignal: 'SIGKILL',
  });
}

/** The local addresses (hex, as /proc/net/tcp* writes them) listening on `port`. */
function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const found: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!fs.existsSync(file)) continue;
    for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (!local || state !== '0A') continue; // 0A: LISTEN
      const [address, p] = local.split(':');
      if (p === hexPort) found.push(address!);
    }
  }
  return found;
}

describe('npm run dev (sandbox/dev.ts)', () => {
  it('refuses NODE_ENV=production with one line, and starts nothing', () => {
    const res = runDev(devEnv({ NODE_ENV: 'production' }));
    expect(res.status).toBe(1);
    expect(res.stderr.trim().split('\n')).toEqual([
      'config error: npm run dev is the sandbox and refuses NODE_ENV=production; run the build with npm start',
    ]);
    expect(res.stdout).toBe('');
  });

  it.each([
    ['SHOPIFY_API_SECRET', 'a-real-app-secret-0123456789'],
    ['ENCRYPTION_KEY', REAL_KEY],
  ])('refuses a %s other than the sandbox one, with one line that does not show it', (name, value) => {
    const res = runDev(devEnv({ [name]: value }));
    expect(res.status).toBe(1);
    const lines = res.stderr.trim().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(`^config error: ${name} is not the sandbox's: npm run dev runs only on the published sandbox values`),
      ),
    ]);
    expect(res.stderr).not.toContain(value);
    expect(res.stdout).toBe('');
  });

  describe(`started (${testProvider})`, () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase();
    });
    afterAll(() => database.drop());

    it('listens on 127.0.0.1 only, never on every interface', async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', DEV], {
        cwd: ROOT,
        env: devEnv({ DATABASE_URL: database.url }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      try {
        const port = await new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`dev did not start: ${out.slice(-2000)}`)), 30_000);
          const check = () => {
            const m = /"port":(\d+)[^\n]*connector listening/.exec(out);
            if (m) {
              clearTimeout(timer);
              resolve(Number(m[1]));
            }
          };
          child.stdout!.on('data', check);
          child.once('exit', () => reject(new Error(`dev exited: ${out.slice(-2000)}`)));
        });
        // 0100007F is 127.0.0.1; 00000000 (0.0.0.0) or an IPv6 any-address would be every interface
        expect(listeningAddresses(port)).toEqual(['0100007F']);
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      } finally {
        child.kill('SIGKILL');
        await exited;
      }
    }, 45_000);
  });
});
