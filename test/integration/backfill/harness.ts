// The full stack (app, service emulator, fake shop) plus the import: the fake shop runs bulk
// operations over generated data, and the runner is attached to the app as server.ts will.
import { createLogger } from '../../../src/observability/logger';
import type { BackfillModule, BackfillModuleDeps } from '../../../src/app/backfill';
import { enableBulkOperations, type BulkDataOptions, type FakeBulk } from '../../../sandbox/fake-shop/bulk';
import type { ServiceEmulatorOptions } from '../../../sandbox/service-emulator';
import { testConfig } from '../../helpers/config';
import { API_KEY, API_SECRET, startStack, type Stack } from '../../helpers/stack';
import { attachBackfill, lateRouter, stopAppRunner } from './wiring';

export interface BackfillStack extends Stack {
  bulk: FakeBulk;
  backfill: BackfillModule;
  /** A second runner on the same database, as a restarted process would have. */
  newRunner(runner?: BackfillModuleDeps['runner']): BackfillModule;
  /** GET /api/backfill until `check` holds. */
  status(check: (s: any) => boolean, timeoutMs?: number, what?: string): Promise<any>;
}

export const FAST_RUNNER: BackfillModuleDeps['runner'] = {
  pollMs: 50,
  opPollMs: [50, 200],
  leaseMs: 2_000,
  retryBaseMs: 50,
  pausePollMs: 100,
};

export async function startBackfillStack(
  opts: { bulk?: BulkDataOptions; runner?: BackfillModuleDeps['runner']; emulator?: ServiceEmulatorOptions } = {},
): Promise<BackfillStack> {
  const late = lateRouter();
  // the production timeout (10 s): app, emulator and fake shop share one event loop here, and a
  // client timeout on a request the emulator did receive is a legitimate duplicate
  const env = { SERVICE_TIMEOUT_MS: '10000' };
  const s = await startStack({ emulator: opts.emulator, server: { routers: [late.router] }, env });
  const config = testConfig(s.database.url, {
    SHOPIFY_API_KEY: API_KEY,
    SHOPIFY_API_SECRET: API_SECRET,
    SERVICE_BASE_URL: s.emulator.url,
    SHOPIFY_ADMIN_ORIGIN: s.shop.url,
    ...env,
  });
  await stopAppRunner(s.app);
  const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  const runners: BackfillModule[] = [];
  const attach = (runner: BackfillModuleDeps['runner'] = {}) => {
    const m = attachBackfill(config, s.app, logger, { ...FAST_RUNNER, ...opts.runner, ...runner });
    runners.push(m);
    return m;
  };
  const main = attach();
  late.set(main.router(main.auth));
  main.runner.start();
  const bulk = await enableBulkOperations(s.shop, { completeAfterMs: 100, ...opts.bulk });
  const closeStack = s.close.bind(s);
  const stack: BackfillStack = Object.assign(s, {
    bulk,
    backfill: main,
    newRunner(runner?: BackfillModuleDeps['runner']) {
      const m = attach(runner);
      m.runner.start();
      return m;
    },
    async status(check: (v: any) => boolean, timeoutMs = 30_000, what = 'backfill status') {
      // every GET runs the session-token middleware and counts the backfill's rows: poll gently
      const end = Date.now() + timeoutMs;
      let last: any;
      for (;;) {
        last = (await s.api('GET', '/api/backfill')).body;
        if (check(last)) return last;
        if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last status: ${JSON.stringify(last)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    },
    async close() {
      await Promise.all(runners.map((r) => r.runner.stop()));
      await bulk.close();
      await closeStack();
    },
  });
  return stack;
}

/** Source ids of the events the emulator received, with how many times each arrived. */
export function receivedCounts(s: Stack, workspaceId: string, eventNames: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of s.emulator.events({ workspaceId })) {
    if (!eventNames.includes(e.event_name)) continue;
    const id = String(e.event_attribute.source_id);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

export function percentile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
}
