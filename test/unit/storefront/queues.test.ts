// A visitor's waiting events as one queue, in the order they came (src/processing/storefront/
// queues.ts), and how product lookups are packed into calls (product-describe.ts's chunksOf): both
// pure, checked here case by case; the whole stack runs them in
// test/integration/storefront-slow-shopify.test.ts.
import { chunksOf } from '../../../src/integrations/shopify/product-describe';
import { productItem } from '../../../src/processing/storefront/items';
import type { ProductFacts, ProductRef } from '../../../src/integrations/shopify/products';
import { ClientQueues } from '../../../src/processing/storefront/queues';
import type { Answer, Answers } from '../../../src/processing/storefront/resolve';
import { emptyStorefrontPlan, keyOf, type QueuedRow } from '../../../src/processing/storefront/store';
import type { ParsedReceipt } from '../../../src/processing/unit';
import type { StoreEvent } from '../../../src/processing/storefront/wire';

const NOW = new Date('2026-11-28T10:00:00.000Z');
const HOUR = 3_600_000;
const CK = keyOf('shop-1', 'client-1');
const r: ParsedReceipt = { id: 7, webhookId: 'w-7', shopDomain: 'a.myshopify.com', topic: 'pixel/events', receivedAt: NOW, payload: null };
const facts = (id: string): ProductFacts => ({
  product_id: id,
  product_title: `Product ${id}`,
  variant_id: `${id}0`,
  variant_title: 'Default Title',
  sku: null,
  price: 10,
  currency: 'USD',
  product_url: null,
  image_url: null,
  available: true,
});
const ref = (id: string): ProductRef => ({ product_id: id, variant_id: `${id}0` });
const view = (id: string, eventId = `e-${id}`) => ({ id: eventId, at: NOW, kind: 'view' as const, ref: ref(id) });
/** Answers: each listed product's facts, 'unknown' for the ones named so, 'pending' for the rest. */
function answers(known: string[], unknown: string[] = []): Answers {
  return {
    get: (_shopId, rf): Answer =>
      known.includes(rf.product_id) ? facts(rf.product_id) : unknown.includes(rf.product_id) ? 'unknown' : 'pending',
    outcomes: new Map(),
  };
}
/** A stored row of the client's queue. */
function row(id: number, waitsFor: 'product' | 'turn', data: unknown, o: Partial<QueuedRow> = {}): QueuedRow {
  return {
    id,
    clientId: 'client-1',
    name: 'product_viewed',
    eventId: `stored-${id}`,
    occurredAt: new Date(NOW.getTime() - HOUR),
    data: JSON.stringify(data),
    waitsFor,
    describeAt: new Date(NOW.getTime() - 1000),
    attempts: 0,
    ...o,
  };
}
const ids = (events: StoreEvent[]) => events.map((e) => (e.kind === 'view' ? e.product.product_id : e.kind));

describe('ClientQueues', () => {
  it('puts an event behind one waiting for its product; an anonymous visitor’s described events wait for an email', () => {
    const plan = emptyStorefrontPlan();
    const q = new ClientQueues(plan, NOW, 24 * HOUR, new Map(), new Map(), () => 0.5);
    expect(q.push(CK, { described: true, event: { id: 'a', at: NOW, kind: 'view', product: facts('1') } }, r)).toBe('email');
    expect(q.held(CK)).toBe(false);
    expect(q.push(CK, { described: false, event: view('2') }, r)).toBe('product');
    expect(q.push(CK, { described: true, event: { id: 'c', at: NOW, kind: 'checkout' } }, r)).toBe('turn');
    expect(q.held(CK)).toBe(true);
    q.into(plan);
    expect(plan.waiting.map((w) => [w.name, w.waitsFor, w.describeAt && (w.describeAt as Date).getTime() - NOW.getTime()])).toEqual([
      ['product_viewed', 'email', null],
      ['product_viewed', 'product', 30_000],
      ['checkout_started', 'turn', 30_000],
    ]);
    expect(plan.waiting.every((w) => (w.expiresAt as Date).getTime() === NOW.getTime() + 24 * HOUR)).toBe(true);
    // the ids only, for the one Shopify has not described
    expect(JSON.parse(plan.waiting[1]!.data)).toEqual({ ref: ref('2') });
  });

  it('applies an identified visitor’s events in order until one still waits; the rest are looked up again with backoff', () => {
    const plan = emptyStorefrontPlan();
    const stored = new Map([
      [CK, [row(1, 'product', { ref: ref('1') }), row(2, 'product', { ref: ref('2') }, { attempts: 2 }), row(3, 'turn', facts('3'))]],
    ]);
    const q = new ClientQueues(plan, NOW, 24 * HOUR, new Map(), stored, () => 0.5);
    q.push(CK, { described: true, event: { id: 'new', at: NOW, kind: 'view', product: facts('4') } }, r);
    const applied: StoreEvent[] = [];
    const res = q.drain(CK, answers(['1', '3', '4']), (e) => applied.push(e));
    expect(ids(applied)).toEqual(['1']);
    expect(res).toEqual({ described: 1, dropped: { unknown: 0, no_scope: 0 }, blocked: true });
    expect(plan.eventsDone).toEqual([1]);
    // every stored row still held waits 2 minutes more (its third lookup left it waiting: 30 s × 2²)
    expect(plan.eventsLater).toEqual([
      { id: 2, describeAt: new Date(NOW.getTime() + 120_000) },
      { id: 3, describeAt: new Date(NOW.getTime() + 120_000) },
    ]);
    // draining again in the same unit changes nothing
    q.drain(CK, answers(['1', '3', '4']), (e) => applied.push(e));
    expect(plan.eventsLater).toHaveLength(2);
    expect(q.held(CK)).toBe(true);
    // the next lookup describes it: the rest follow, in order, and the new event last
    const plan2 = emptyStorefrontPlan();
    const q2 = new ClientQueues(plan2, NOW, 24 * HOUR, new Map(), new Map([[CK, stored.get(CK)!.slice(1)]]), () => 0.5);
    q2.push(CK, { described: true, event: { id: 'new', at: NOW, kind: 'view', product: facts('4') } }, r);
    const later: StoreEvent[] = [];
    expect(q2.drain(CK, answers(['2', '4']), (e) => later.push(e)).blocked).toBe(false);
    expect(ids(later)).toEqual(['2', '3', '4']);
    expect(plan2.eventsDone).toEqual([2, 3]);
    q2.into(plan2);
    expect(plan2.waiting).toEqual([]);
  });

  it('drops only what Shopify says is not the shop’s, and goes on behind it', () => {
    const plan = emptyStorefrontPlan();
    const q = new ClientQueues(
      plan,
      NOW,
      24 * HOUR,
      new Map(),
      new Map([[CK, [row(1, 'product', { ref: ref('9') }), row(2, 'product', { ref: ref('2') })]]]),
    );
    const applied: StoreEvent[] = [];
    expect(q.drain(CK, answers(['2'], ['9']), (e) => applied.push(e))).toEqual({
      described: 1,
      dropped: { unknown: 1, no_scope: 0 },
      blocked: false,
    });
    expect(ids(applied)).toEqual(['2']);
    expect(plan.eventsDone).toEqual([1, 2]);
  });

  it('an anonymous visitor’s described events wait for an email with Shopify’s data; the email takes them in order', () => {
    const plan = emptyStorefrontPlan();
    const emailRows = new Map([[CK, [{ ...row(1, 'turn', facts('1')), waitsFor: 'email' }]]]);
    const stored = new Map([[CK, [row(2, 'product', { ref: ref('2') }), row(3, 'product', { ref: ref('3') })]]]);
    const q = new ClientQueues(plan, NOW, 24 * HOUR, emailRows, stored);
    q.push(CK, { described: false, event: view('4') }, r);
    expect(q.drain(CK, answers(['2']), null)).toMatchObject({ described: 1, blocked: true });
    expect(plan.eventsDescribed).toEqual([{ id: 2, data: JSON.stringify(productItem(facts('2'))) }]);
    // identified now: the events that waited for an email only, in order; the rest still wait for their products
    expect(ids(q.takeForEmail(CK))).toEqual(['1', '2']);
    expect(plan.eventsDone).toEqual([1, 2]);
    expect(q.held(CK)).toBe(true);
    const applied: StoreEvent[] = [];
    expect(q.drain(CK, answers(['2', '3', '4']), (e) => applied.push(e)).blocked).toBe(false);
    expect(ids(applied)).toEqual(['3', '4']);
  });

  it('forgets a visitor who withdrew consent: nothing of this unit is kept', () => {
    const plan = emptyStorefrontPlan();
    const q = new ClientQueues(plan, NOW, 24 * HOUR, new Map(), new Map());
    q.push(CK, { described: false, event: view('1') }, r);
    q.forget(CK);
    q.into(plan);
    expect(plan.waiting).toEqual([]);
  });
});

describe('chunksOf (product lookups, as few calls as the limit allows)', () => {
  const variants = (pairs: Array<[string, string[]]>) => new Map(pairs.map(([vid, pids]) => [vid, new Set(pids)]));

  it('keeps a product and its variants in one call, and fills calls up to the limit', () => {
    const products = Array.from({ length: 300 }, (_, i) => String(i));
    const vs = variants(products.map((p) => [`v${p}`, [p]]));
    const chunks = chunksOf(products, vs, 250);
    expect(chunks.map((c) => c.products.length + c.variants.size)).toEqual([250, 250, 100]);
    for (const c of chunks) for (const vid of c.variants.keys()) expect(c.products).toContain(vid.slice(1));
  });

  it('puts variants of products not asked (their rows are fresh) wherever there is room', () => {
    const chunks = chunksOf(
      ['1'],
      variants([
        ['v1', ['1']],
        ['v7', ['7']],
        ['v8', ['8']],
      ]),
      3,
    );
    expect(chunks.map((c) => [c.products, [...c.variants.keys()]])).toEqual([
      [['1'], ['v1', 'v7']],
      [[], ['v8']],
    ]);
    expect(chunksOf([], new Map(), 250)).toEqual([]);
  });
});
