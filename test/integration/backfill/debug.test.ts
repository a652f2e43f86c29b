import { receivedCounts, startBackfillStack } from './harness';
jest.setTimeout(120000);
it('debug', async () => {
  const s = await startBackfillStack({ bulk: { customers: 5000, orders: 5000 }, emulator: { rateLimit: 1000 } });
  const ws = await s.connectShop(undefined, { rateLimit: 1000 });
  const t0 = Date.now();
  let last = Date.now(); const ev: string[] = [];
  const w = setInterval(() => { const n = Date.now(); if (n - last > 600) ev.push(`stall ${last - t0}-${n - t0} (${n - last})`); last = n; }, 10);
  await s.api('POST', '/api/backfill', {});
  await s.status((b) => b.state === 'completed' && b.delivered === b.queued, 90_000);
  clearInterval(w);
  console.log('took', Date.now() - t0, ev.join('\n'));
  const counts = receivedCounts(s, ws.workspaceId, ['customer_imported', 'order_imported']);
  const dups = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
  console.log('dups', dups.length);
  for (const id of dups.slice(0, 3)) {
    const m = await s.app.db.outboxMessage.findFirst({ where: { sourceId: id }, include: { deliveryLogs: true } });
    console.log(id, m?.attempts, JSON.stringify(m?.deliveryLogs.map((l) => [l.startedAt.getTime() - t0, l.durationMs, l.outcome, l.error])));
    console.log(s.emulator.events({ workspaceId: ws.workspaceId }).filter((e) => e.event_attribute.source_id === id).map((e) => e.receivedAt - t0));
  }
  await s.close();
});
