import { testProvider } from '../../helpers/db';
import { receivedCounts, startBackfillStack, type BackfillStack } from './harness';

describe(`historical import, small store (${testProvider})`, () => {
  let s: BackfillStack;
  let ws: { apiKey: string; workspaceId: string; shopId: string };
  beforeAll(async () => {
    s = await startBackfillStack({ bulk: { customers: 30, orders: 40, phoneOnlyEvery: 10 }, emulator: { rateLimit: 500 } });
    ws = await s.connectShop(undefined, { rateLimit: 500 });
  });
  afterAll(() => s.close());

  it('imports customers and orders, then reports them delivered', async () => {
    const res = await s.api('POST', '/api/backfill', { kinds: ['customers', 'orders'] });
    expect(res.status).toBe(202);
    const done = await s.status((b) => b.state === 'completed' && b.delivered === b.queued, 20_000);
    expect(done).toMatchObject({ backfill_id: res.body.backfill_id, state: 'completed', kinds: ['customers', 'orders'], processed: 70, total: 70, queued: 67, delivered: 67, skipped: 3, eta_s: 0, error: null });
    const counts = receivedCounts(s, ws.workspaceId, ['customer_imported', 'order_imported']);
    expect(counts.size).toBe(67);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });
});
