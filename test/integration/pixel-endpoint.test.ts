// POST /pixel/events under hostile input: every request gets a 4xx or the uniform 204, never a
// 5xx; an unknown key is answered like a known one; one client's flood is cut by its rate limit
// while the shop's webhooks and other shoppers go on; and nothing of a refused batch reaches
// the outbox or stays stored after stage 2.
import { randomUUID } from 'node:crypto';
import { HoldableClock } from '../helpers/clock';
import { testProvider } from '../helpers/db';
import { activatePixel, batch, ev, knownCustomer, MUG, postPixel, TOTE } from '../helpers/pixel';
import { tablesContaining } from '../helpers/rows';
import { DEFAULT_SHOP, startStack, type Stack } from '../helpers/stack';

describe(`POST /pixel/events (${testProvider})`, () => {
  let s: Stack;
  let key: string;
  let shopId: string;
  let workspaceId: string;
  const pixelReceipts = () => s.app.db.webhookReceipt.count({ where: { kind: 'pixel' } });
  // real time, held while a rate limit is counted (the limits follow the app's clock)
  const clock = new HoldableClock();
  beforeAll(async () => {
    s = await startStack({ server: { now: clock.now } });
    ({ shopId, workspaceId } = await s.connectShop());
    key = await activatePixel(s);
  });
  afterAll(() => s.close());

  it('answers a batch 204 with CORS headers any storefront origin may post with, and a preflight too', async () => {
    const res = await postPixel(s, batch(key, randomUUID(), [ev.page()]), 'text/plain;charset=UTF-8', 'https://any-store.example');
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect((await postPixel(s, batch(key, randomUUID(), [ev.page()]), 'application/json')).status).toBe(204);

    const pre = await fetch(`${s.app.url}/pixel/events`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://shop.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    expect(pre.headers.get('access-control-allow-methods')).toContain('POST');
    expect(pre.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('content-type');
    const get = await fetch(`${s.app.url}/pixel/events`);
    expect(get.status).toBe(405);
    await s.settle();
  });

  it('refuses oversized, mistyped and malformed requests with a 4xx, storing nothing', async () => {
    const before = await pixelReceipts();
    const big = batch(key, randomUUID(), [ev.search('x'.repeat(70_000))]);
    const cases: Array<[string, string | Buffer, string | null, number]> = [
      ['over 64 KB', big, 'text/plain', 413],
      ['a form', 'v=1&key=x', 'application/x-www-form-urlencoded', 415],
      // (a string body would get text/plain from fetch itself)
      ['no content type', Buffer.from(batch(key, randomUUID(), [])), null, 415],
      ['empty', '', 'text/plain', 400],
      ['not JSON', '{not json', 'text/plain', 400],
      ['an array', '[1,2,3]', 'text/plain', 400],
      ['null', 'null', 'text/plain', 400],
      ['keys in another order', JSON.stringify({ key, v: 1, client_id: 'c', events: [] }), 'text/plain', 400],
      ['no client id', JSON.stringify({ v: 1, key, events: [] }), 'text/plain', 400],
      ['an escaped key', `{"v":1,"key":"\\u0041${key}","client_id":"c","events":[]}`, 'text/plain', 400],
      ['a quote in the client id', `{"v":1,"key":"${key}","client_id":"a\\"b","events":[]}`, 'text/plain', 400],
      ['a raw NUL', Buffer.concat([Buffer.from(batch(key, 'c', []).slice(0, -1)), Buffer.from([0]), Buffer.from('}')]), 'text/plain', 400],
      ['binary', Buffer.from([0x7b, 0xff, 0xfe, 0x00, 0x7d]), 'text/plain', 400],
      ['version 2', batch(key, 'c', []).replace('"v":1', '"v":2'), 'text/plain', 400],
    ];
    for (const [what, body, type, status] of cases) {
      const res = await postPixel(s, body, type);
      expect([what, res.status]).toEqual([what, status]);
      expect([what, res.headers.get('access-control-allow-origin')]).toEqual([what, '*']);
    }
    const gz = await fetch(`${s.app.url}/pixel/events`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'content-encoding': 'gzip' },
      body: 'x',
    });
    expect(gz.status).toBe(415);
    expect(await pixelReceipts()).toBe(before);
    const metrics = await (await fetch(`${s.app.url}/metrics`)).text();
    expect(metrics).toMatch(/^connector_pixel_requests_total\{outcome="bad_request"\} 1[01]$/m);
    expect(metrics).toMatch(/^connector_pixel_requests_total\{outcome="too_large"\} 1$/m);
  });

  it('answers an unknown key exactly as a known one, and stores nothing of it', async () => {
    const before = await pixelReceipts();
    const known = await postPixel(s, batch(key, randomUUID(), [ev.page()]));
    await s.settle();
    const stored = await pixelReceipts();
    expect(stored).toBe(before + 1);
    const unknown = await postPixel(s, batch('pk_does_not_exist_0123456789', randomUUID(), [ev.page()]));
    const strip = (h: Headers) => [...h.entries()].filter(([name]) => !['date', 'etag', 'keep-alive', 'connection'].includes(name));
    expect({ status: unknown.status, text: unknown.text, headers: strip(unknown.headers) }).toEqual({
      status: known.status,
      text: known.text,
      headers: strip(known.headers),
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(await pixelReceipts()).toBe(stored);
  });

  it('takes batches of wrong shapes at the door, drops them in stage 2: nothing reaches the outbox, nothing of them stays stored', async () => {
    const MARK = `MARKER-${randomUUID()}`;
    const view = ev.view(MUG);
    const bad = (events: unknown[], extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        v: 1,
        key,
        client_id: `c-${MARK}`,
        consent: { marketing: true, analytics: true },
        customer: null,
        events,
        ...extra,
      });
    const bodies = [
      // unknown names, shapes that do not match the event, values of the wrong type
      bad([{ ...view, name: 'order_completed', data: { title: MARK } }]),
      bad([{ ...view, data: { productVariant: { title: MARK, product: { title: MARK } } } }]),
      bad([{ ...ev.add(MUG), data: { cartLine: { quantity: 'two', merchandise: { product: { id: MARK } } } } }]),
      bad([{ ...view, data: { productVariant: { ...view.data.productVariant, price: { amount: MARK } } } }]),
      bad([{ ...view, timestamp: 42, data: { note: MARK } }]),
      bad([{ ...view, id: { MARK } }]),
      bad([{ ...view, data: { productVariant: { ...view.data.productVariant, title: MARK.repeat(30) } } }]),
      // envelopes that are wrong: too many events, events not a list, no consent, an email that is not a string
      bad(Array.from({ length: 51 }, () => ({ ...ev.view(TOTE), data: { productVariant: { product: { id: '1', title: MARK } } } }))),
      bad({ MARK } as unknown as unknown[]),
      bad([view], { consent: MARK }),
      bad([view], { customer: { email: { MARK } } }),
      // starts like a batch, then is not JSON
      `{"v":1,"key":"${key}","client_id":"c-${MARK}","events":[${MARK}}`,
    ];
    const before = await pixelReceipts();
    for (const body of bodies) expect((await postPixel(s, body)).status).toBe(204);
    await s.settle();
    expect(await pixelReceipts()).toBe(before + bodies.length);

    const receipts = await s.app.db.webhookReceipt.findMany({ where: { kind: 'pixel' }, orderBy: { id: 'desc' }, take: bodies.length });
    expect(receipts.every((r) => r.processedAt !== null && r.body === null && r.messageCount === 0)).toBe(true);
    expect(receipts.filter((r) => r.outcome === 'rejected').length).toBeGreaterThanOrEqual(5);
    expect(await s.app.db.outboxMessage.count({ where: { shopId } })).toBe(0);
    expect(await s.app.db.pixelEvent.count({ where: { shopId } })).toBe(0);
    expect(await tablesContaining(s.app.db, MARK)).toEqual([]);
    const metrics = await (await fetch(`${s.app.url}/metrics`)).text();
    expect(metrics).toMatch(/^connector_pixel_events_total\{outcome="invalid"\} ([6-9]|\d\d+)$/m);
  });

  it('cuts a flood of 4,000 requests from one client id to its rate, never answering 5xx; the shop’s webhooks and other shoppers go on', async () => {
    const flooder = randomUUID();
    const body = batch(key, flooder, [ev.page()]);
    const before = await pixelReceipts();
    const statuses = new Map<number, number>();
    let sent = 0;
    // the app's clock stands still through the flood: its bucket gets no time to refill
    clock.hold();
    const webhooks: Array<Promise<{ status: number }>> = [];
    const worker = async () => {
      while (sent < 4_000) {
        sent += 1;
        if (sent % 1000 === 0)
          webhooks.push(
            s.shop.sendWebhook(s.app.url, {
              topic: 'orders/create',
              shopDomain: DEFAULT_SHOP,
              payload: { ...s.fixture('orders-create'), id: 900_000 + sent },
              webhookId: `flood-order-${sent}`,
            }),
          );
        const res = await fetch(`${s.app.url}/pixel/events`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain;charset=UTF-8' },
          body,
        });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
    expect([...statuses.keys()]).toEqual([204]);
    expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(4_000);
    await s.settle(30_000);
    // a burst of 20 (PIXEL_RATE_PER_CLIENT is 2 a second, its burst 10 seconds of it)
    expect((await pixelReceipts()) - before).toBe(20);
    // then 2 a second of the app's clock
    clock.advance(1_000);
    for (let i = 0; i < 5; i++) expect((await postPixel(s, body)).status).toBe(204);
    await s.settle();
    expect((await pixelReceipts()) - before).toBe(22);
    clock.release();

    // the shop's webhooks during the flood: stored and delivered
    expect((await Promise.all(webhooks)).map((w) => w.status)).toEqual([200, 200, 200, 200]);
    await s.until(
      () => s.emulator.events({ workspaceId, eventName: 'order_placed' }).length >= 4,
      10_000,
      'the orders sent during the flood',
    );
    // another shopper of the shop is not limited by the flooder
    const other = randomUUID();
    expect((await postPixel(s, batch(key, other, [ev.view(TOTE)], { email: knownCustomer(s, 'other.shopper@example.com') }))).status).toBe(
      204,
    );
    await s.until(
      () => s.emulator.events({ workspaceId, eventName: 'viewed_product', email: 'other.shopper@example.com' }).length === 1,
      10_000,
      'the other shopper’s view',
    );
    const metrics = await (await fetch(`${s.app.url}/metrics`)).text();
    expect(metrics).toMatch(/^connector_pixel_requests_total\{outcome="rate_limited"\} \d{4}$/m);
  }, 120_000);
});
