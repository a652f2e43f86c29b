// No background loop can spin. Each loop gets a dependency that throws on every call; over a
// window it may call it only a handful of times (growing waits after each failure, through
// timers, so the event loop turns), and /healthz answers every probe meanwhile. A loop that
// retried at once would call it thousands of times and starve the HTTP server.
//
// The backoff policies are a fifth of the app's here (B = 200 ms where the app waits 1 s, then 2,
// 4, ... with ±20%), and each window is counted in B. The bounds are on how many calls the
// waits leave room for in a window: a timer never fires early, so no machine makes more calls;
// a slow one makes fewer, and the bounds below it are one call or two.
import { BackfillStore } from '../../src/backfill/store';
import { ReceiptStore } from '../../src/intake/receipt-store';
import { createLogger } from '../../src/observability/logger';
import { Metrics } from '../../src/observability/metrics';
import { ShopQueue } from '../../src/outbox/due';
import { OutboxRepository } from '../../src/outbox/repository';
import { createStorefrontSweeper } from '../../src/processing/storefront/sweeper';
import { StorefrontStore } from '../../src/processing/storefront/store';
import { sampleOrder } from '../../sandbox/samples';
import type { Db } from '../../src/db/client';
import { testProvider } from '../helpers/db';
import { activatePixel, batch, ev, MUG, sendBatch } from '../helpers/pixel';
import { startStack, type Stack } from '../helpers/stack';

jest.mock('../../src/lib/backoff', () => {
  const actual = jest.requireActual<typeof import('../../src/lib/backoff')>('../../src/lib/backoff');
  const fifth = (p: typeof actual.LOOP_BACKOFF) => ({ ...p, baseMs: p.baseMs / 5, maxMs: p.maxMs / 5 });
  return { ...actual, LOOP_BACKOFF: fifth(actual.LOOP_BACKOFF), SHOP_BACKOFF: fifth(actual.SHOP_BACKOFF) };
});

/** The first wait after a failure, here: a fifth of the app's 1 s. */
const B = 200;
/** 3.5 B: room for the first wait (at least 0.8 B) and the second (at least 1.6 B), not the third. */
const WINDOW_MS = 3.5 * B;
const injected = () => Promise.reject(new Error('injected fault'));

/**
 * Calls /healthz every 100 ms for `ms`, each call given 10 s to answer (a server a spinning loop
 * starves never does); returns how many answered and how many did not, and the slowest answer
 * (ms), which is printed, not asserted: it is a figure of this machine.
 */
async function probeHealth(s: Stack, ms: number): Promise<{ slowestMs: number; failed: number; answered: number }> {
  const end = Date.now() + ms;
  let slowestMs = 0;
  let failed = 0;
  let answered = 0;
  while (Date.now() < end) {
    const started = performance.now();
    const res = await fetch(`${s.app.url}/healthz`, { signal: AbortSignal.timeout(10_000) }).catch(() => null);
    slowestMs = Math.max(slowestMs, performance.now() - started);
    if (res?.status === 200) answered += 1;
    else failed += 1;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { slowestMs, failed, answered };
}

describe(`background loops back off after a failure (${testProvider})`, () => {
  let s: Stack;
  let shopId: string;
  beforeAll(async () => {
    s = await startStack({ server: { backfillRunner: { pollMs: 100 } } });
    ({ shopId } = await s.connectShop());
  });
  afterAll(() => s.close());
  afterEach(() => jest.restoreAllMocks());

  const expectCalm = (health: { slowestMs: number; failed: number; answered: number }) => {
    console.log(`/healthz while the loop failed: ${health.answered} answered, slowest ${health.slowestMs.toFixed(0)} ms`);
    expect(health.failed).toBe(0);
    expect(health.answered).toBeGreaterThanOrEqual(1);
  };

  it('a delivery lane that throws keeps its shop away for a growing while', async () => {
    const claim = jest.spyOn(OutboxRepository.prototype, 'claim').mockImplementation(injected);
    await s.webhook('orders/create', sampleOrder(1), { webhookId: 'lane-1' });
    const health = await probeHealth(s, WINDOW_MS);
    // waits of B then 2 B (±20%): at most 3 tries in 3.5 B (one more for a pass already under
    // way), where a spin made thousands
    expect(claim.mock.calls.length).toBeLessThanOrEqual(4);
    expectCalm(health);
    // and it does try again, however long this machine takes to come round to it
    await s.until(() => claim.mock.calls.length >= 2, 10_000, 'a second try');
    claim.mockRestore();
    // the shop is served again once the fault is gone (its wait is at most a few B)
    await s.until(() => s.emulator.events().some((e) => e.event_attribute.source_id === 'lane-1'), 15_000, 'the order after the fault');
  });

  it('the discovery pass that throws waits longer after each failure, whatever the wake-ups', async () => {
    const lease = jest.spyOn(ShopQueue.prototype, 'lease').mockImplementation(injected);
    const started = lease.mock.calls.length;
    // wake-ups keep coming: they must not bring a failing pass back sooner
    const nudges = setInterval(() => s.app.worker.nudge(), 10);
    const health = await probeHealth(s, WINDOW_MS);
    clearInterval(nudges);
    expect(lease.mock.calls.length - started).toBeLessThanOrEqual(4);
    expectCalm(health);
  });

  it('stage 2 that throws waits longer after each failure, whatever the receipts arriving', async () => {
    const pending = jest.spyOn(ReceiptStore.prototype, 'pending').mockImplementation(injected);
    const sending = (async () => {
      for (let i = 0; i < 20; i++) {
        await s.shop.sendWebhook(s.app.url, {
          topic: 'orders/create',
          shopDomain: 'demo-store.myshopify.com',
          payload: sampleOrder(100 + i),
          webhookId: `stage2-${i}`,
        });
      }
    })();
    // waits of B, 2 B and 4 B (±20%): at most 4 tries in 7.5 B, where a fixed wait of B made 8
    const health = await probeHealth(s, 7.5 * B);
    await sending;
    expect(pending.mock.calls.length).toBeLessThanOrEqual(4);
    expectCalm(health);
    pending.mockRestore();
    // nothing lost: once the fault is gone the stored receipts are processed
    s.app.processor.nudge();
    await s.settle(30_000);
  });

  it('the pixel stage that throws rejects each batch after a bounded number of tries', async () => {
    const key = await activatePixel(s);
    const shops = jest.spyOn(StorefrontStore.prototype, 'shops').mockImplementation(injected);
    for (let i = 0; i < 5; i++) expect(await sendBatch(s, batch(key, `client-${i}`, [ev.view(MUG)]))).toBe(204);
    const health = await probeHealth(s, 7.5 * B);
    await s.settle(15_000);
    // a unit, then each receipt alone twice: 1 + 2 per batch at most, however the batches group
    expect(shops.mock.calls.length).toBeLessThanOrEqual(1 + 2 * 5 + 2);
    expect(await s.app.db.webhookReceipt.count({ where: { kind: 'pixel', outcome: 'rejected' } })).toBe(5);
    expectCalm(health);
  });

  it('the import runner whose claim throws waits longer after each failure', async () => {
    const claimNext = jest.spyOn(BackfillStore.prototype, 'claimNext').mockImplementation(injected);
    const health = await probeHealth(s, WINDOW_MS);
    // it polls every 100 ms here; failing, it waits B, then 2 B
    expect(claimNext.mock.calls.length).toBeLessThanOrEqual(4);
    expectCalm(health);
  });

  it('the periodic key check isolates a failing shop: the others are still checked', async () => {
    const other = await s.connectShop('second.myshopify.com');
    await s.app.db.connection.updateMany({ data: { lastCheckedAt: null } });
    // the first shop's row breaks the check (its envelope is garbage); the second is checked
    await s.app.db.connection.update({ where: { shopId }, data: { apiKeyEnc: 'v1.garbage' } });
    const result = await s.app.checkKeys();
    expect(result).toMatchObject({ checked: 1 });
    const checked = await s.app.db.connection.findUniqueOrThrow({ where: { shopId: other.shopId } });
    expect(checked.lastCheckedAt).not.toBeNull();
  });

  it('the storefront sweeper that throws logs and waits for its next tick', async () => {
    const calls: number[] = [];
    const db = {
      pixelEvent: { findFirst: () => (calls.push(Date.now()), injected()) },
      pixelVisitor: { findFirst: injected },
    } as unknown as Db;
    const sweeper = createStorefrontSweeper({
      db,
      logger: createLogger('silent'),
      metrics: new Metrics(),
      now: () => new Date(),
      everyMs: 200,
    });
    sweeper.start();
    // it keeps ticking after failures: three runs come (a busy machine only makes them later;
    // the 20-s guard is for a sweeper that stopped)
    try {
      await s.until(() => calls.length >= 3, 20_000, 'three sweeps after failures');
    } finally {
      sweeper.stop();
    }
    expect(calls.length).toBeGreaterThanOrEqual(3);
    // and each waited for its tick rather than retrying at once: an interval never fires early
    // (5 ms for the rounding of timers)
    const gaps = calls.slice(1).map((t, i) => t - calls[i]!);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(200 - 5);
  });
});
