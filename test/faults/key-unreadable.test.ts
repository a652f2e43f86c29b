// The common rotation mistake: a restart with a new ENCRYPTION_KEY and the old one forgotten.
// The shop whose key no configured key decrypts is a state of that shop (key_unreadable): its
// deliveries are held, the page says so, it is logged once, other shops and /healthz are
// untouched. A restart with the old key among the previous ones resumes the held deliveries, each
// sent once, and re-encrypts the key, so the old key can then be removed.
import { randomBytes } from 'node:crypto';
import { createSecretBox } from '../../src/crypto/secret-box';
import { createLogger } from '../../src/observability/logger';
import { sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';

const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('base64');

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { lines, logger, count: (msg: string) => lines.filter((l) => String(l.msg).includes(msg)).length };
}

/** /healthz answers 200 (within 10 s: a server held by a spinning loop never does); how long it took is printed, not asserted. */
async function healthzMs(s: Stack): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${s.app.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
  expect(res.status).toBe(200);
  return performance.now() - started;
}

describe(`a key no configured encryption key decrypts (${testProvider})`, () => {
  let s: Stack;
  afterAll(() => s?.close());

  it('holds that shop alone, says so once, and resumes exactly once after a restart with the old key', async () => {
    s = await startStack({ env: { ENCRYPTION_KEY: K1 } });
    const a = await s.connectShop('rotated.myshopify.com');

    // the mistake: a new key, the old one forgotten
    const logs = capture();
    await s.restart({ ENCRYPTION_KEY: K2 }, { logger: logs.logger });
    // the start-up scan runs in the background: one line names what no key decrypts
    expect(
      await s.until(() => logs.lines.find((l) => String(l.msg).startsWith('stored secrets that no configured encryption key decrypts'))),
    ).toMatchObject({ connections: 1, shops: expect.arrayContaining(['rotated.myshopify.com']) });
    const b = await s.connectShop('healthy.myshopify.com');

    const slowest: number[] = [];
    for (let i = 0; i < 20; i++) {
      expect(
        (await s.webhook('orders/create', sampleOrder(1000 + i), { domain: 'rotated.myshopify.com', webhookId: `a-${i}` })).status,
      ).toBe(200);
      if (i < 5)
        expect(
          (await s.webhook('orders/create', sampleOrder(2000 + i), { domain: 'healthy.myshopify.com', webhookId: `b-${i}` })).status,
        ).toBe(200);
      slowest.push(await healthzMs(s));
    }
    // the other shop is served as usual
    await s.until(() => s.emulator.events({ workspaceId: b.workspaceId }).length >= 5, 15_000, "the healthy shop's 5 orders");
    // the unreadable shop's deliveries wait, held with the reason, none lost
    await s.until(
      async () =>
        (await s.app.db.outboxMessage.count({ where: { shopId: a.shopId, status: 'held', heldReason: 'key_unreadable' } })) === 20,
      15_000,
      '20 held orders',
    );
    // a few seconds more: the held shop costs nothing and nothing spins
    const lanesBefore = logs.count('delivery lane failed');
    await new Promise((r) => setTimeout(r, 2000));
    slowest.push(await healthzMs(s));
    expect(logs.count('delivery lane failed')).toBe(lanesBefore);
    expect(logs.count('cannot be decrypted with any configured key')).toBe(1);
    console.log(`/healthz answered all ${slowest.length} probes, the slowest in ${Math.max(...slowest).toFixed(0)} ms`);
    expect(s.emulator.events({ workspaceId: a.workspaceId })).toHaveLength(0);
    const page = await s.api('GET', '/api/connection', undefined, 'rotated.myshopify.com');
    expect(page.body).toMatchObject({ status: 'key_unreadable', key_hint: expect.any(String) });
    expect(JSON.stringify(page.body)).not.toContain(a.apiKey);
    const lists = await s.api('GET', '/api/lists', undefined, 'rotated.myshopify.com');
    expect(lists).toMatchObject({ status: 409, body: { error: { code: 'key_unreadable' } } });
    expect((await s.api('GET', '/api/connection', undefined, 'healthy.myshopify.com')).body).toMatchObject({ status: 'connected' });

    // the operator restores the old key among the previous ones: the held deliveries go out at once
    const fixed = capture();
    await s.restart({ ENCRYPTION_KEY: K2, ENCRYPTION_KEYS_PREVIOUS: K1 }, { logger: fixed.logger });
    await s.until(() => s.emulator.events({ workspaceId: a.workspaceId }).length >= 20, 15_000, 'the 20 held orders');
    await new Promise((r) => setTimeout(r, 500));
    const sent = s.emulator.events({ workspaceId: a.workspaceId }).map((e) => String(e.event_attribute.source_id));
    expect(sent).toHaveLength(20);
    expect(new Set(sent).size).toBe(20);
    expect(s.emulator.events({ workspaceId: b.workspaceId })).toHaveLength(5);
    // the rotation finished: the key is under K2 now, and the old key can go
    const row = await s.app.db.connection.findUniqueOrThrow({ where: { shopId: a.shopId } });
    expect(createSecretBox(Buffer.from(K2, 'base64')).decrypt(row.apiKeyEnc, a.shopId)).toBe(a.apiKey);
    expect(await s.until(() => fixed.lines.find((l) => String(l.msg).startsWith('stored secrets checked')))).toMatchObject({
      reencrypted: expect.any(Number),
      remainingUnderPreviousKeys: 0,
      unreadable: 0,
      resumedShops: 1,
    });
    await s.restart({ ENCRYPTION_KEY: K2 });
    expect((await s.api('GET', '/api/connection', undefined, 'rotated.myshopify.com')).body).toMatchObject({ status: 'connected' });
  });

  it('resumes the held deliveries once the merchant pastes the key again', async () => {
    const a = await s.connectShop('repasted.myshopify.com');
    // this shop's row under a key the app has never had
    const stranger = createSecretBox(randomBytes(32));
    await s.app.db.connection.update({ where: { shopId: a.shopId }, data: { apiKeyEnc: stranger.encrypt(a.apiKey, a.shopId) } });
    for (let i = 0; i < 3; i++)
      await s.webhook('orders/create', sampleOrder(3000 + i), { domain: 'repasted.myshopify.com', webhookId: `r-${i}` });
    await s.until(
      async () => (await s.app.db.outboxMessage.count({ where: { shopId: a.shopId, status: 'held', heldReason: 'key_unreadable' } })) === 3,
      15_000,
      '3 held orders',
    );
    expect((await s.api('PUT', '/api/connection', { api_key: a.apiKey }, 'repasted.myshopify.com')).status).toBe(200);
    await s.until(() => s.emulator.events({ workspaceId: a.workspaceId }).length >= 3, 15_000, 'the 3 held orders');
    await new Promise((r) => setTimeout(r, 300));
    expect(new Set(s.emulator.events({ workspaceId: a.workspaceId }).map((e) => e.event_attribute.source_id)).size).toBe(3);
    expect(s.emulator.events({ workspaceId: a.workspaceId })).toHaveLength(3);
  });
});
