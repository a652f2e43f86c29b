import { BackfillStore } from '../../../src/backfill/store';
import { startBackfillStack } from './harness';
jest.setTimeout(120000);
it('debug', async () => {
  const s = await startBackfillStack({ bulk: { customers: 3000, orders: 0 }, emulator: { rateLimit: 1000 } });
  await s.connectShop(undefined, { rateLimit: 1000 });
  const t0 = Date.now();
  const ev: string[] = [];
  const orig = BackfillStore.prototype.commit;
  BackfillStore.prototype.commit = async function (this: BackfillStore, input) {
    const t = Date.now() - t0;
    try { return await orig.call(this, input); } finally { ev.push(`commit ${t}-${Date.now() - t0}`); }
  };
  let last = Date.now();
  const w = setInterval(() => { const n = Date.now(); if (n - last > 150) ev.push(`stall ${last - t0}-${n - t0} (${n - last})`); last = n; }, 10);
  await s.api('POST', '/api/backfill', { kinds: ['customers'] });
  await s.status((b) => b.state === 'completed', 60_000);
  await new Promise((r) => setTimeout(r, 3000));
  clearInterval(w);
  console.log(ev.join('\n'));
  BackfillStore.prototype.commit = orig;
  await s.close();
});
