// Product images for line items against the fake shop's Admin GraphQL, over real HTTP, with the
// cache in a real database: hits make no call, misses go in one nodes(ids:) call, throttling and
// slowness degrade within the deadline, and the products/* webhooks keep the cache fresh.
import request from 'supertest';
import type { GraphqlRequest } from '../../../sandbox/fake-shop';
import { Metrics } from '../../../src/observability/metrics';
import { createProductCatalog, type ProductCatalog } from '../../../src/integrations/shopify/products';
import { expectNoSecrets, startHarness, type Harness } from './harness';

const SHOP = 'images-store.myshopify.com';
const NO_SCOPE = 'plain-store.myshopify.com';
const SLOW = 'slow-store.myshopify.com';
const THROTTLED = 'busy-store.myshopify.com';
const DOMAIN = 'https://images.example';
const BIG = '9007199254740993'; // 2^53 + 1

const WITH_PRODUCTS = 'read_orders,read_customers,read_checkouts,read_products';

describe('product images for line items', () => {
  let h: Harness;
  let metrics: Metrics;
  let catalog: ProductCatalog;
  let clock = Date.now();
  const seen: GraphqlRequest[] = [];
  const shops = new Map<string, { id: string; domain: string }>();

  const calls = (domain: string) => h.fake.tokenStats(domain).graphqlCalls;
  const lookups = (domain: string) => seen.filter((r) => r.shop.domain === domain && /\bnodes\s*\(/.test(r.query));

  async function install(domain: string) {
    const res = await request(h.url)
      .get('/api/whoami')
      .set('Authorization', `Bearer ${h.fake.mintSessionToken(domain)}`);
    expect(res.status).toBe(200);
    shops.set(domain, res.body);
    return res.body as { id: string; domain: string };
  }

  beforeAll(async () => {
    h = await startHarness({
      encrypt: true,
      shops: [
        { domain: SHOP, scopes: WITH_PRODUCTS, primaryDomain: DOMAIN },
        { domain: NO_SCOPE },
        { domain: SLOW, scopes: WITH_PRODUCTS },
        { domain: THROTTLED, scopes: WITH_PRODUCTS },
      ],
    });
    h.fake.addGraphqlHandler((req) => {
      seen.push(req);
      return undefined;
    });
    for (const domain of [SHOP, SLOW, THROTTLED]) {
      h.fake.addProduct(domain, {
        id: BIG,
        handle: 'linen-shirt',
        image: 'https://cdn.example/linen.png',
        variants: [
          { id: '9007199254740995', image: 'https://cdn.example/linen-sand.png' },
          { id: '502', image: null },
        ],
      });
      h.fake.addProduct(domain, { id: '600', handle: 'canvas-tote', image: 'https://cdn.example/tote.png', variants: [{ id: '601' }] });
      h.fake.addProduct(domain, {
        id: '700',
        handle: 'draft-hat',
        image: null,
        published: false,
        variants: [{ id: '701', image: 'https://cdn.example/hat.png' }],
      });
    }
    metrics = new Metrics();
    // no cool-off here: each test below sees the Admin API as it is; the cool-off has its own test
    catalog = createProductCatalog({
      db: h.db,
      shopify: h.shopify,
      tokens: h.tokens,
      logger: h.logger,
      metrics,
      now: () => new Date(clock),
      coolOffMs: 0,
    });
    for (const domain of [SHOP, NO_SCOPE, SLOW, THROTTLED]) await install(domain);
  });
  afterAll(async () => {
    await h.close();
  });

  const items = [
    { product_id: BIG, variant_id: '9007199254740995' }, // variant with its own image
    { product_id: BIG, variant_id: '502' }, // variant without: the featured image
    { product_id: '600', variant_id: '601' },
    { product_id: '700', variant_id: '701' }, // not on the Online Store: no link
    { product_id: '999', variant_id: '9999' }, // unknown to Shopify
    { product_id: null, variant_id: null }, // custom line item
  ];
  const expected = [
    { image_url: 'https://cdn.example/linen-sand.png', product_url: `${DOMAIN}/products/linen-shirt`, product_handle: 'linen-shirt' },
    { image_url: 'https://cdn.example/linen.png', product_url: `${DOMAIN}/products/linen-shirt`, product_handle: 'linen-shirt' },
    { image_url: 'https://cdn.example/tote.png', product_url: `${DOMAIN}/products/canvas-tote`, product_handle: 'canvas-tote' },
    { image_url: 'https://cdn.example/hat.png', product_url: null, product_handle: 'draft-hat' },
    { image_url: null, product_url: null, product_handle: null },
    { image_url: null, product_url: null, product_handle: null },
  ];

  it('looks up every miss in one batched nodes call, with exact ids beyond 2^53', async () => {
    const before = calls(SHOP);
    const result = await catalog.enrich(shops.get(SHOP)!, items);
    expect(result.outcome).toBe('fetched');
    expect(result.items).toEqual(expected);
    expect(result.apiCalls).toBe(1);
    expect(calls(SHOP) - before).toBe(1);
    const [call] = lookups(SHOP);
    expect(lookups(SHOP)).toHaveLength(1);
    expect([...(call!.variables.ids as string[])].sort()).toEqual(
      [
        `gid://shopify/Product/${BIG}`,
        'gid://shopify/Product/600',
        'gid://shopify/Product/700',
        'gid://shopify/Product/999',
        'gid://shopify/ProductVariant/9007199254740995',
        'gid://shopify/ProductVariant/502',
        'gid://shopify/ProductVariant/601',
        'gid://shopify/ProductVariant/701',
        'gid://shopify/ProductVariant/9999',
      ].sort(),
    );
    const row = await h.db.productInfo.findUniqueOrThrow({ where: { shopId_productId: { shopId: shops.get(SHOP)!.id, productId: BIG } } });
    expect(row).toMatchObject({ handle: 'linen-shirt', url: `${DOMAIN}/products/linen-shirt`, imageUrl: 'https://cdn.example/linen.png' });
    expect(JSON.parse(row.variantImages)).toEqual({ '9007199254740995': 'https://cdn.example/linen-sand.png', '502': null });
  });

  it('answers from the cache with no Admin API call, unknown products included', async () => {
    const before = calls(SHOP);
    const result = await catalog.enrich(shops.get(SHOP)!, items);
    expect(result).toMatchObject({ outcome: 'hit', apiCalls: 0, items: expected });
    expect(calls(SHOP)).toBe(before);
  });

  it('looks up only a variant the cached row has not seen, keeping the row fresh', async () => {
    h.fake.addProduct(SHOP, {
      id: '600',
      handle: 'canvas-tote',
      image: 'https://cdn.example/tote.png',
      variants: [{ id: '601' }, { id: '602', image: 'https://cdn.example/tote-red.png' }],
    });
    const before = lookups(SHOP).length;
    const row = await h.db.productInfo.findUniqueOrThrow({
      where: { shopId_productId: { shopId: shops.get(SHOP)!.id, productId: '600' } },
    });
    const result = await catalog.enrich(shops.get(SHOP)!, [{ product_id: '600', variant_id: '602' }]);
    expect(result).toMatchObject({
      outcome: 'fetched',
      items: [{ image_url: 'https://cdn.example/tote-red.png', product_handle: 'canvas-tote' }],
    });
    expect(
      lookups(SHOP)
        .slice(before)
        .map((r) => r.variables.ids),
    ).toEqual([['gid://shopify/ProductVariant/602']]);
    const after = await h.db.productInfo.findUniqueOrThrow({
      where: { shopId_productId: { shopId: shops.get(SHOP)!.id, productId: '600' } },
    });
    expect(after.fetchedAt.getTime()).toBe(row.fetchedAt.getTime());
    expect(JSON.parse(after.variantImages)).toEqual({ '601': null, '602': 'https://cdn.example/tote-red.png' });
  });

  it('looks a product up again once its row is older than the TTL', async () => {
    h.fake.addProduct(SHOP, { id: '600', handle: 'canvas-tote-2', image: 'https://cdn.example/tote-2.png', variants: [{ id: '601' }] });
    const before = calls(SHOP);
    expect((await catalog.enrich(shops.get(SHOP)!, [{ product_id: '600', variant_id: '601' }])).outcome).toBe('hit');
    clock += 25 * 3600 * 1000;
    const result = await catalog.enrich(shops.get(SHOP)!, [{ product_id: '600', variant_id: '601' }]);
    expect(result).toMatchObject({
      outcome: 'fetched',
      items: [
        { image_url: 'https://cdn.example/tote-2.png', product_url: `${DOMAIN}/products/canvas-tote-2`, product_handle: 'canvas-tote-2' },
      ],
    });
    expect(calls(SHOP) - before).toBe(1);
  });

  it('products/update refreshes a cached row from the payload, without an API call', async () => {
    const shop = shops.get(SHOP)!;
    await catalog.enrich(shop, items); // the rows of the first test are stale by now: refresh them
    const before = calls(SHOP);
    const payload = `{"id":${BIG},"handle":"linen-shirt-v2","status":"active","published_at":"2026-01-01T00:00:00Z",
      "image":{"id":1,"src":"https://cdn.example/linen-v2.png"},
      "images":[{"id":1,"position":1,"src":"https://cdn.example/linen-v2.png"},{"id":9007199254740999,"position":2,"src":"https://cdn.example/linen-v2-sand.png"}],
      "variants":[{"id":9007199254740995,"image_id":9007199254740999},{"id":502,"image_id":null}]}`;
    await expect(catalog.onProductUpdate(shop.id, payload)).resolves.toMatchObject({ outcome: 'refreshed' });
    const result = await catalog.enrich(shop, items.slice(0, 2));
    expect(result).toMatchObject({ outcome: 'hit', apiCalls: 0 });
    expect(result.items).toEqual([
      {
        image_url: 'https://cdn.example/linen-v2-sand.png',
        product_url: `${DOMAIN}/products/linen-shirt-v2`,
        product_handle: 'linen-shirt-v2',
      },
      { image_url: 'https://cdn.example/linen-v2.png', product_url: `${DOMAIN}/products/linen-shirt-v2`, product_handle: 'linen-shirt-v2' },
    ]);
    expect(calls(SHOP)).toBe(before);
  });

  it('products/update leaves uncached products uncached, and unpublishing drops the link', async () => {
    const shop = shops.get(SHOP)!;
    await expect(catalog.onProductUpdate(shop.id, { id: 123456, handle: 'never-ordered', images: [], variants: [] })).resolves.toEqual({
      outcome: 'not_cached',
      prices: [],
    });
    expect(await h.db.productInfo.count({ where: { shopId: shop.id, productId: '123456' } })).toBe(0);
    await expect(
      catalog.onProductUpdate(shop.id, {
        id: 600,
        handle: 'canvas-tote-2',
        status: 'draft',
        images: [],
        variants: [{ id: 601, image_id: null }],
      }),
    ).resolves.toMatchObject({ outcome: 'refreshed' });
    const [tote] = (await catalog.enrich(shop, [{ product_id: '600', variant_id: '601' }])).items;
    expect(tote).toEqual({ image_url: null, product_url: null, product_handle: 'canvas-tote-2' });
  });

  it('products/delete removes the row; the next order looks the product up again', async () => {
    const shop = shops.get(SHOP)!;
    await expect(catalog.onProductDelete(shop.id, `{"id":${BIG}}`)).resolves.toBe(true);
    expect(await h.db.productInfo.count({ where: { shopId: shop.id, productId: BIG } })).toBe(0);
    await expect(catalog.onProductDelete(shop.id, `{"id":${BIG}}`)).resolves.toBe(false);
    const before = calls(SHOP);
    expect((await catalog.enrich(shop, [{ product_id: BIG, variant_id: null }])).outcome).toBe('fetched');
    expect(calls(SHOP) - before).toBe(1);
  });

  it('without read_products: no Admin API call, and no images even from rows cached earlier', async () => {
    const shop = shops.get(NO_SCOPE)!;
    await h.db.productInfo.create({
      data: {
        shopId: shop.id,
        productId: '600',
        handle: 'canvas-tote',
        url: 'https://x.example/products/canvas-tote',
        imageUrl: 'https://cdn.example/tote.png',
        fetchedAt: new Date(clock),
      },
    });
    const before = calls(NO_SCOPE);
    const result = await catalog.enrich(shop, [{ product_id: '600', variant_id: '601' }]);
    expect(result).toMatchObject({
      outcome: 'no_scope',
      apiCalls: 0,
      items: [{ image_url: null, product_url: null, product_handle: null }],
    });
    expect(calls(NO_SCOPE)).toBe(before);
  });

  it("reads a shop's offline session for its scopes at most once a minute, and for a token only when the Admin API is asked", async () => {
    const loads = jest.spyOn(h.tokens, 'getOfflineSession');
    const fresh = createProductCatalog({
      db: h.db,
      shopify: h.shopify,
      tokens: h.tokens,
      logger: h.logger,
      metrics: new Metrics(),
      now: () => new Date(clock),
      coolOffMs: 0,
    });
    const loadsOf = (domain: string) => loads.mock.calls.filter(([d]) => d === domain).length;
    try {
      // without read_products: one read answers every batch of the next minute
      for (let i = 0; i < 3; i++)
        expect((await fresh.enrich(shops.get(NO_SCOPE)!, [{ product_id: '600', variant_id: '601' }])).outcome).toBe('no_scope');
      expect(loadsOf(NO_SCOPE)).toBe(1);
      clock += 61_000;
      expect((await fresh.enrich(shops.get(NO_SCOPE)!, [{ product_id: '600', variant_id: '601' }])).outcome).toBe('no_scope');
      expect(loadsOf(NO_SCOPE)).toBe(2);
      // with it: a miss reads the session again for its token; a batch of cached products, not at all
      const shop = shops.get(SHOP)!;
      await fresh.onProductDelete(shop.id, '{"id":600}');
      expect((await fresh.enrich(shop, [{ product_id: '600', variant_id: '601' }])).outcome).toBe('fetched');
      expect(loadsOf(SHOP)).toBe(2);
      expect((await fresh.enrich(shop, [{ product_id: '600', variant_id: '601' }])).outcome).toBe('hit');
      expect(loadsOf(SHOP)).toBe(2);
      // stage 2 passes the scopes it read with the shop: no session read for them at all
      clock += 61_000;
      expect(
        (await fresh.enrich({ ...shops.get(NO_SCOPE)!, scope: 'read_orders' }, [{ product_id: '600', variant_id: '601' }])).outcome,
      ).toBe('no_scope');
      expect((await fresh.enrich({ ...shop, scope: WITH_PRODUCTS }, [{ product_id: '600', variant_id: '601' }])).outcome).toBe('hit');
      expect([loadsOf(NO_SCOPE), loadsOf(SHOP)]).toEqual([2, 2]);
    } finally {
      loads.mockRestore();
    }
  });

  it('a THROTTLED answer waits for the bucket to restore, then gets the images', async () => {
    const shop = shops.get(THROTTLED)!;
    // empty bucket; the query (2 + 2 per id = 6 points) is back after 120 ms at 50 points/s
    h.fake.setThrottle(THROTTLED, { currentlyAvailable: 0, restoreRate: 50 });
    const before = lookups(THROTTLED).length;
    const result = await catalog.enrich(shop, [{ product_id: '600', variant_id: '601' }]);
    expect(result).toMatchObject({
      outcome: 'fetched',
      items: [{ image_url: 'https://cdn.example/tote.png', product_handle: 'canvas-tote' }],
    });
    expect(lookups(THROTTLED).length - before).toBe(2);
    // it waited the 120 ms the answer asked for (a timer never ends early); 'fetched', not
    // 'timeout', says the images came before the deadline
    expect(result.durationMs).toBeGreaterThanOrEqual(100);
  });

  it('keeps retrying a throttled shop only while it fits the deadline, then goes without images', async () => {
    const shop = shops.get(THROTTLED)!;
    // another app drains the bucket before each of our calls: every answer is THROTTLED (the
    // query costs 4 points: 400 ms to restore at 10 points/s)
    let drain = true;
    h.fake.addGraphqlHandler((req) => {
      if (drain && req.shop.domain === THROTTLED) h.fake.setThrottle(THROTTLED, { currentlyAvailable: 0, restoreRate: 10 });
      return undefined;
    });
    const before = lookups(THROTTLED).length;
    const result = await catalog.enrich(shop, [{ product_id: BIG, variant_id: null }]);
    expect(result).toMatchObject({ outcome: 'throttled', items: [{ image_url: null, product_url: null, product_handle: null }] });
    // 'throttled', not 'timeout': it stopped by itself when the next wait would pass the deadline,
    // after at most 2000 / 400 tries (a wait never ends early), however slow the round trips
    const attempts = lookups(THROTTLED).length - before;
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(attempts).toBeLessThanOrEqual(6);
    drain = false;

    // what the last answer said of the bucket holds the next call back: no request when the wait cannot fit
    h.fake.setThrottle(THROTTLED, { currentlyAvailable: 0, restoreRate: 1 });
    const again = lookups(THROTTLED).length;
    await catalog.enrich(shop, [{ product_id: BIG, variant_id: null }]); // learns the 1 point/s rate
    const third = await catalog.enrich(shop, [{ product_id: BIG, variant_id: null }]);
    // at once: a wait would have run into the deadline and ended as 'timeout'
    expect(third.outcome).toBe('throttled');
    expect(lookups(THROTTLED).length - again).toBe(1);
  });

  it('a slow Admin API (past the deadline) degrades at the deadline with outcome timeout', async () => {
    // a deadline of its own, shorter than the app's 2 s, and an answer held five times as long: a
    // catalog that waited past its deadline would get it (being that late would take a loop
    // stalled for a second)
    const DEADLINE_MS = 300;
    const hurried = createProductCatalog({
      db: h.db,
      shopify: h.shopify,
      tokens: h.tokens,
      logger: h.logger,
      metrics,
      now: () => new Date(clock),
      coolOffMs: 0,
      deadlineMs: DEADLINE_MS,
    });
    const held: Array<() => void> = [];
    const timers: NodeJS.Timeout[] = [];
    let answered = false;
    h.fake.addGraphqlHandler((req) =>
      req.shop.domain === SLOW && /\bnodes\s*\(/.test(req.query)
        ? new Promise<undefined>((resolve) => {
            const go = () => {
              answered = true;
              resolve(undefined);
            };
            held.push(go);
            timers.push(setTimeout(go, 5 * DEADLINE_MS));
          })
        : undefined,
    );
    const result = await hurried.enrich(shops.get(SLOW)!, [{ product_id: '600', variant_id: '601' }]);
    expect(result).toMatchObject({ outcome: 'timeout', items: [{ image_url: null, product_url: null, product_handle: null }] });
    // it gave up while the Admin API still held its answer, and not before its deadline (a timer
    // never fires early)
    expect(held).toHaveLength(1);
    expect(answered).toBe(false);
    expect(result.durationMs).toBeGreaterThanOrEqual(DEADLINE_MS);
    timers.forEach(clearTimeout);
    held.forEach((go) => go());
  });

  it('a failing Admin API degrades at once with outcome failed; a stale row still answers', async () => {
    const shop = shops.get(SHOP)!;
    await catalog.enrich(shop, [{ product_id: BIG, variant_id: null }]);
    clock += 25 * 3600 * 1000; // the row is stale: it needs a lookup, which fails
    h.fake.failNext('graphql', 500);
    const result = await catalog.enrich(shop, [
      { product_id: '424242', variant_id: null },
      { product_id: BIG, variant_id: null },
    ]);
    expect(result.outcome).toBe('failed');
    expect(result.items).toEqual([
      { image_url: null, product_url: null, product_handle: null },
      { image_url: 'https://cdn.example/linen.png', product_url: `${DOMAIN}/products/linen-shirt`, product_handle: 'linen-shirt' },
    ]);
  });

  it('after a failed lookup, does not ask the Admin API again for a while: cached products still answer', async () => {
    const cooling = createProductCatalog({
      db: h.db,
      shopify: h.shopify,
      tokens: h.tokens,
      logger: h.logger,
      metrics: new Metrics(),
      now: () => new Date(clock),
      coolOffMs: 60_000,
    });
    const shop = shops.get(SHOP)!;
    h.fake.failNext('graphql', 500);
    expect((await cooling.enrich(shop, [{ product_id: '515151', variant_id: null }])).outcome).toBe('failed');
    const before = calls(SHOP);
    const during = await cooling.enrich(shop, [
      { product_id: '525252', variant_id: null },
      { product_id: '600', variant_id: '601' },
    ]);
    expect(during.outcome).toBe('cooling_off');
    expect(calls(SHOP)).toBe(before);
    clock += 61_000;
    expect((await cooling.enrich(shop, [{ product_id: '525252', variant_id: null }])).outcome).toBe('fetched');
    expect(calls(SHOP)).toBeGreaterThan(before);
  });

  it('storefront lookups go on past the caller’s deadline and are cached; a caller meanwhile waits for them instead of asking again', async () => {
    // the SLOW shop's product lookups answer after 3 s (the handler of the test above)
    const storefront = createProductCatalog({
      db: h.db,
      shopify: h.shopify,
      tokens: h.tokens,
      logger: h.logger,
      metrics: new Metrics(),
      now: () => new Date(clock),
      coolOffMs: 0,
    });
    const shop = shops.get(SLOW)!;
    const refs = [{ product_id: '600', variant_id: '601' }];
    const before = lookups(SLOW).length;
    const first = await storefront.describe(shop, refs, Date.now() + 500);
    expect(first).toMatchObject({ outcome: 'timeout', items: ['unavailable'] });
    const second = await storefront.describe(shop, refs, Date.now() + 5000);
    expect(second).toMatchObject({
      outcome: 'fetched',
      items: [expect.objectContaining({ product_id: '600', product_title: 'canvas-tote' })],
    });
    expect(lookups(SLOW).length - before).toBe(1);
    expect((await storefront.describe(shop, refs, Date.now() + 500)).outcome).toBe('hit');
    expect(await h.db.productInfo.count({ where: { shopId: shop.id, productId: '600' } })).toBe(1);
  });

  it('storefront lookups: as few calls as the limit allows, within the shop’s budget in query cost; the rest once it refills', async () => {
    const budgeted = createProductCatalog({
      db: h.db,
      shopify: h.shopify,
      tokens: h.tokens,
      logger: h.logger,
      metrics: new Metrics(),
      now: () => new Date(clock),
      coolOffMs: 0,
      storefrontLookupsPerMinute: 1,
    });
    const shop = shops.get(SHOP)!;
    const ids = Array.from({ length: 150 }, (_, i) => String(70_000 + i));
    for (const id of ids) h.fake.addProduct(SHOP, { id, handle: `budget-${id}`, title: `Budget ${id}`, variants: [{ id: `${id}1` }] });
    const refs = ids.map((id) => ({ product_id: id, variant_id: null }));
    const before = lookups(SHOP).length;
    const first = await budgeted.describe(shop, refs, Date.now() + 2000);
    // one lookup of 100 ids a minute (PIXEL_LOOKUPS_PER_MINUTE=1): one call of 100, the other 50 wait
    expect(first.outcome).toBe('over_budget');
    expect(lookups(SHOP).length - before).toBe(1);
    expect(lookups(SHOP).at(-1)!.variables.ids).toHaveLength(100);
    expect(first.items.filter((i) => i === 'unavailable')).toHaveLength(50);
    expect(first.items.filter((i) => typeof i === 'object')).toHaveLength(100);
    expect((await budgeted.describe(shop, refs, Date.now() + 2000)).outcome).toBe('over_budget');
    expect(lookups(SHOP).length - before).toBe(1);
    clock += 60_000;
    const later = await budgeted.describe(shop, refs, Date.now() + 2000);
    expect(later.outcome).toBe('fetched');
    expect(lookups(SHOP).length - before).toBe(2);
    expect(later.items.every((i) => typeof i === 'object')).toBe(true);
  });

  it('counts every outcome in connector_enrichment_total, and logs no token', async () => {
    const values = Object.fromEntries((await metrics.enrichment.get()).values.map((v) => [v.labels.outcome, v.value]));
    expect(values).toMatchObject({
      fetched: expect.any(Number),
      hit: expect.any(Number),
      no_scope: 1,
      throttled: 3,
      timeout: 1,
      failed: 1,
    });
    expect(values.fetched).toBeGreaterThanOrEqual(6);
    expect(h.logText()).toContain('product images unavailable');
    expectNoSecrets(h.logText(), [
      ...[SHOP, SLOW, THROTTLED, NO_SCOPE].flatMap((d) => [h.fake.tokenStats(d).lastAccessToken, h.fake.tokenStats(d).lastRefreshToken]),
    ]);
  });
});
