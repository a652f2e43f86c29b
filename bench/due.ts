// Due times: how late a message due in the future is sent after its due time. Shops each with
// one order_placed message due a few seconds ahead (spaced so no two share a workspace's
// second), queued straight into the outbox and indexed as due before the app starts; one app
// process (ROLE=all) then sleeps until each due time, woken by its own timer (nothing else wakes
// it: no webhooks come in). Lateness = the emulator's receivedAt − the message's due time. The
// emulator runs in a process of its own, so its clock is not delayed by this one's work.
// test/integration/worker-scale.test.ts asserts that the timer, not a sweep or a poll, sends it.
import {
  createBenchDatabase,
  fmt,
  heading,
  percentile,
  providersFromArgs,
  runMain,
  seedShops,
  sleep,
  startApp,
  startEmulator,
  table,
  withPrisma,
  type Provider,
} from './lib';

const SHOPS = Number(process.env.BENCH_DUE_SHOPS ?? 40);
/** The first message is due this long after the queue is written (the app starts meanwhile). */
const FIRST_DUE_MS = 10_000;
const SPACING_MS = 250;
/** The target: p99 of the lateness (what the worker-scale test bound a single message by). */
const TARGET_P99_MS = 300;

async function measure(provider: Provider): Promise<Array<string | number>> {
  const { mapWebhook } = await import('../src/mapping');
  const { DEFAULT_SETTINGS } = await import('../src/settings/settings');
  const { toRow } = await import('../src/outbox/store-messages');
  const { lowerDue } = await import('../src/outbox/due');
  const { sampleOrder } = await import('../sandbox/samples');

  const emulator = await startEmulator();
  const db = await createBenchDatabase(provider);
  try {
    const workspaces = await emulator.createWorkspaces(SHOPS);
    const shops = workspaces.map((w, i) => ({ domain: `due-${i}.myshopify.com`, workspaceId: w.id, apiKey: w.apiKey }));
    const ids = await seedShops(db, shops);
    const first = Date.now() + FIRST_DUE_MS;
    const dueOf = new Map<string, number>();
    await withPrisma(db, async (prisma) => {
      for (const [i, shop] of shops.entries()) {
        const dueAt = new Date(first + i * SPACING_MS);
        const [m] = mapWebhook({
          topic: 'orders/create',
          payload: sampleOrder(i),
          webhookId: `due-${i}`,
          shopDomain: shop.domain,
          receivedAt: dueAt,
          settings: DEFAULT_SETTINGS,
        }).messages;
        const shopId = ids.get(shop.domain)!;
        await prisma.outboxMessage.create({ data: { ...toRow(m!, { shopId, status: 'queued', heldReason: null }), runAt: dueAt, dueAt } });
        await lowerDue(prisma, provider, [{ shopId, runAt: dueAt }]);
        dueOf.set(m!.sourceId, dueAt.getTime());
      }
    });
    const app = await startApp(db, { SERVICE_BASE_URL: emulator.url });
    try {
      const last = first + (SHOPS - 1) * SPACING_MS;
      await sleep(last - Date.now() + 3_000);
      const events = await emulator.eventsSince(0);
      const late = events.filter((e) => dueOf.has(e.sourceId)).map((e) => e.receivedAt - dueOf.get(e.sourceId)!);
      const early = late.filter((x) => x < 0).length;
      const p99 = percentile(late, 99);
      return [
        provider,
        `${late.length} of ${SHOPS}`,
        early,
        `${fmt(percentile(late, 50), 0)} / ${fmt(p99, 0)}${p99 <= TARGET_P99_MS ? '' : ' ✗'} / ${fmt(Math.max(...late), 0)}`,
      ];
    } finally {
      await app.stop();
    }
  } finally {
    await db.drop();
    await emulator.close();
  }
}

const COLUMNS = ['database', 'sent', 'sent before due', `lateness p50 / p99 / max ms (target p99 ≤ ${TARGET_P99_MS})`];

export async function runDue(): Promise<void> {
  const providers = await providersFromArgs();
  heading(
    'Due times',
    `${SHOPS} connected shops, each with one order_placed due ${FIRST_DUE_MS / 1000} s ahead and then every ${SPACING_MS} ms, queued and indexed as due before one app process (ROLE=all) starts; no webhooks. Lateness: the emulator's receivedAt − the due time.`,
  );
  const rows: Array<Array<string | number>> = [];
  for (const provider of providers) rows.push(await measure(provider));
  console.log(table(COLUMNS, rows));
}

if (require.main === module) runMain(runDue);
