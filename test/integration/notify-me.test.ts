// POST /proxy/back-in-stock over real HTTP, signed as Shopify's app proxy signs (the sandbox's
// forwardedQuery), with the fake shop's catalog and customers behind the Admin API: who may
// subscribe, to what, how often; one row per shop, variant and email; and the compliance topics
// and the expiry sweep that remove them.
import { forwardedQuery } from '../../sandbox/fake-shop/app-proxy';
import { sampleCustomer } from '../../sandbox/samples';
import { HoldableClock } from '../helpers/clock';
import { testProvider } from '../helpers/db';
import { API_SECRET, DEFAULT_SHOP, startStack, type Stack } from '../helpers/stack';

const SMALL = '45105'; // Merino Socks, small: sold out when the shop starts
const MEDIUM = '45106'; // in stock
const LARGE = '45107';
const SOCKS = '8105';
const CUSTOMER = { id: '5551', email: 'Logged.In@Example.com' };
const PHONE_ONLY = { id: '5552', email: '' };
const OTHER_SHOP = 'other-store.myshopify.com';
const PER_IP = 8;
const PER_EMAIL = 3;

interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

describe(`POST /proxy/back-in-stock (${testProvider})`, () => {
  let s: Stack;
  let shopId: string;
  let otherShopId: string;
  let ip = 0;
  /** A client address of its own for each request unless one is given: the per-IP limit stays out of the way. */
  const nextIp = () => `203.0.113.${(ip = (ip % 250) + 1)}`;
  // the app's clock, which the signature's timestamp is checked against; held where a request's
  // distance from it must not change while it travels
  const clock = new HoldableClock();

  beforeAll(async () => {
    s = await startStack({
      server: { now: clock.now },
      env: { NOTIFY_ME_PER_IP_MINUTE: String(PER_IP), NOTIFY_ME_PER_EMAIL_HOUR: String(PER_EMAIL) },
    });
    ({ shopId } = await s.connectShop());
    ({ shopId: otherShopId } = await s.connectShop(OTHER_SHOP));
    for (const domain of [DEFAULT_SHOP, OTHER_SHOP])
      await s.webhook('app/scopes_update', s.shop.grantScopes(domain, ['read_products']), { domain });
    s.shop.addCustomer(DEFAULT_SHOP, CUSTOMER);
    s.shop.addCustomer(DEFAULT_SHOP, PHONE_ONLY);
  }, 60_000);
  afterAll(() => s.close());

  async function proxy(
    body: unknown,
    o: {
      shop?: string;
      customerId?: string | null;
      secret?: string;
      nowMs?: number;
      ip?: string;
      json?: boolean;
      query?: (q: URLSearchParams) => void;
      contentType?: string;
      method?: string;
    } = {},
  ): Promise<Answer> {
    const q = new URLSearchParams(
      forwardedQuery(new URLSearchParams(), {
        shop: o.shop ?? DEFAULT_SHOP,
        customerId: o.customerId ?? null,
        secret: o.secret ?? API_SECRET,
        nowMs: o.nowMs ?? clock.now().getTime(),
      }),
    );
    o.query?.(q);
    const text =
      typeof body === 'string' ? body : o.json ? JSON.stringify(body) : new URLSearchParams(body as Record<string, string>).toString();
    const res = await fetch(`${s.app.url}/proxy/back-in-stock?${q}`, {
      method: o.method ?? 'POST',
      headers: {
        'content-type': o.contentType ?? (o.json ? 'application/json' : 'application/x-www-form-urlencoded'),
        'x-forwarded-for': o.ip ?? nextIp(),
      },
      body: o.method === 'GET' ? undefined : text,
    });
    const raw = await res.text();
    let parsed: unknown = raw;
    try {
      parsed = JSON.parse(raw);
    } catch {
      /* not JSON: the assertions show it */
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  const rows = (where: Record<string, unknown> = {}) =>
    s.app.db.stockSubscription.findMany({ where: { shopId, ...where }, orderBy: { id: 'asc' } });
  const total = () => s.app.db.stockSubscription.count();

  it('stores a guest’s subscription (form-encoded), and renews the same row when asked again (JSON, a gid)', async () => {
    const first = await proxy({ variant_id: SMALL, email: '  Guest.One@Example.com ' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ ok: true, message: expect.stringMatching(/back in stock/), subscription: { variant_id: SMALL } });
    expect(first.headers.get('content-type')).toMatch(/^application\/json/);
    const [row] = await rows({ email: 'guest.one@example.com' });
    expect(row).toMatchObject({ variantId: SMALL, productId: SOCKS, customerId: null, source: 'guest', notifiedAt: null });
    const days = (row!.expiresAt.getTime() - row!.createdAt.getTime()) / 86_400_000;
    expect(days).toBe(90);

    const again = await proxy({ variant_id: `gid://shopify/ProductVariant/${SMALL}`, email: 'guest.one@example.com' }, { json: true });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ ok: true, message: expect.stringMatching(/already on the list/) });
    const after = await rows({ email: 'guest.one@example.com' });
    expect(after).toHaveLength(1);
    expect(after[0]!.id).toBe(row!.id);
    expect(after[0]!.renewedAt.getTime()).toBeGreaterThanOrEqual(row!.renewedAt.getTime());
    expect(after[0]!.expiresAt.getTime()).toBeGreaterThanOrEqual(row!.expiresAt.getTime());
  });

  it('makes one row of two requests at once for the same variant and email', async () => {
    const answers = await Promise.all([0, 1, 2].map(() => proxy({ variant_id: SMALL, email: 'twice@example.com' })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 201]);
    expect(await rows({ email: 'twice@example.com' })).toHaveLength(1);
  });

  it('refuses a forged, tampered, unsigned, stale or future request with 401 and stores nothing', async () => {
    const before = await total();
    const body = { variant_id: SMALL, email: 'forger@example.com' };
    // held: a request signed 91 s from the app's now (its timestamp in whole seconds) is still more
    // than 90 s from it when checked, whatever time it spends on the way
    clock.hold();
    let cases: Array<[string, Answer]>;
    try {
      cases = [
        ['another secret', await proxy(body, { secret: 'not-the-app-secret' })],
        ['the shop changed after signing', await proxy(body, { query: (q) => q.set('shop', OTHER_SHOP) })],
        ['a customer id added after signing', await proxy(body, { query: (q) => q.set('logged_in_customer_id', CUSTOMER.id) })],
        ['no signature', await proxy(body, { query: (q) => q.delete('signature') })],
        ['a signature that is not hex', await proxy(body, { query: (q) => q.set('signature', 'x'.repeat(64)) })],
        ['91 s old', await proxy(body, { nowMs: clock.now().getTime() - 91_000 })],
        ['91 s ahead', await proxy(body, { nowMs: clock.now().getTime() + 91_000 })],
      ];
    } finally {
      clock.release();
    }
    for (const [what, a] of cases) {
      expect([what, a.status, a.body?.error?.code]).toEqual([what, 401, 'unauthorized']);
      expect(JSON.stringify(a.body)).not.toContain(API_SECRET);
    }
    expect(await total()).toBe(before);
  });

  it('identifies a logged-in customer by the signed id alone: their email from Shopify, whatever the body says', async () => {
    const withoutEmail = await proxy({ variant_id: SMALL }, { customerId: CUSTOMER.id });
    expect(withoutEmail.status).toBe(201);
    const claimed = await proxy({ variant_id: LARGE, email: 'someone.else@example.com' }, { customerId: CUSTOMER.id });
    // Large is in stock: nothing stored, and no row for the claimed email either way
    expect(claimed.body).toMatchObject({ ok: true, in_stock: true });
    const mine = await rows({ customerId: CUSTOMER.id });
    expect(mine.map((r) => [r.variantId, r.email, r.source])).toEqual([[SMALL, 'logged.in@example.com', 'customer']]);
    expect(await rows({ email: 'someone.else@example.com' })).toEqual([]);
  });

  it("takes a logged-in customer's email from the profile the app keeps, without asking Shopify", async () => {
    // a customer Shopify told the app about by webhook, whom the fake Admin API does not know
    const customer = sampleCustomer(4242);
    expect((await s.webhook('customers/create', customer)).status).toBe(200);
    const a = await proxy({ variant_id: SMALL }, { customerId: String(customer.id) });
    expect(a.status).toBe(201);
    expect((await rows({ customerId: String(customer.id) })).map((r) => r.email)).toEqual([customer.email]);
  });

  it('refuses a logged-in customer Shopify has no email for, with 422', async () => {
    const a = await proxy({ variant_id: SMALL, email: 'typed@example.com' }, { customerId: PHONE_ONLY.id });
    expect([a.status, a.body.error.code]).toEqual([422, 'no_email']);
    const unknown = await proxy({ variant_id: SMALL }, { customerId: '999999' });
    expect([unknown.status, unknown.body.error.code]).toEqual([422, 'no_email']);
    expect(await rows({ email: 'typed@example.com' })).toEqual([]);
  });

  it('refuses a guest without a valid email, a missing or malformed variant, and a variant Shopify does not have, with 422', async () => {
    const before = await total();
    const cases: Array<[unknown, string]> = [
      [{ variant_id: SMALL, email: 'not-an-address' }, 'invalid_email'],
      [{ variant_id: SMALL, email: 'a b@example.com' }, 'invalid_email'],
      [{ variant_id: SMALL }, 'email_required'],
      [{ variant_id: SMALL, email: '   ' }, 'email_required'],
      [{ email: 'guest@example.com' }, 'invalid_request'],
      [{ variant_id: 'gid://shopify/Product/8105', email: 'guest@example.com' }, 'invalid_request'],
      [{ variant_id: '999999999', email: 'guest@example.com' }, 'unknown_variant'],
    ];
    for (const [body, code] of cases) {
      const a = await proxy(body);
      expect([body, a.status, a.body.error?.code, typeof a.body.error?.message]).toEqual([body, 422, code, 'string']);
    }
    expect(await total()).toBe(before);
  });

  it('stores nothing for a variant on sale now, and says so', async () => {
    const a = await proxy({ variant_id: MEDIUM, email: 'early@example.com' });
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ ok: true, in_stock: true, message: expect.stringMatching(/in stock now/) });
    expect(await rows({ email: 'early@example.com' })).toEqual([]);
  });

  it('answers 429 past the per-email limit and past the per-IP limit, storing nothing more', async () => {
    const email = 'eager@example.com';
    const answers: number[] = [];
    for (let i = 0; i < PER_EMAIL + 1; i++) answers.push((await proxy({ variant_id: SMALL, email })).status);
    expect(answers).toEqual([201, ...Array<number>(PER_EMAIL - 1).fill(200), 429]);

    const address = '198.51.100.7';
    const fromOne: number[] = [];
    for (let i = 0; i < PER_IP + 1; i++)
      fromOne.push((await proxy({ variant_id: SMALL, email: `ip${i}@example.com` }, { ip: address })).status);
    expect(fromOne).toEqual([...Array<number>(PER_IP).fill(201), 429]);
    const limited = await proxy({ variant_id: SMALL, email: 'ip-late@example.com' }, { ip: address });
    expect([limited.status, limited.body.error.code]).toEqual([429, 'rate_limited']);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await rows({ email: 'ip-late@example.com' })).toEqual([]);
    // another address is not held back
    expect((await proxy({ variant_id: SMALL, email: 'ip-other@example.com' })).status).toBe(201);
  });

  it('answers 503 and stores nothing while Shopify cannot say whether the variant exists', async () => {
    const BEANIE = '9000000002'; // never asked for yet: no remembered answer
    s.shop.setInventory(DEFAULT_SHOP, BEANIE, 0);
    s.shop.failNext('graphql', 503, 1);
    const a = await proxy({ variant_id: BEANIE, email: 'patient@example.com' });
    expect([a.status, a.body.error.code]).toEqual([503, 'unavailable']);
    expect(a.body.error.message).toMatch(/try again/i);
    expect(await rows({ email: 'patient@example.com' })).toEqual([]);
    // and once Shopify answers again, the same request is taken
    expect((await proxy({ variant_id: BEANIE, email: 'patient@example.com' })).status).toBe(201);
  });

  it('answers 503 for a shop that cannot take alerts: not installed, or without read_products', async () => {
    const unknown = await proxy({ variant_id: SMALL, email: 'guest@example.com' }, { shop: 'never-installed.myshopify.com' });
    expect([unknown.status, unknown.body.error.code]).toEqual([503, 'not_available']);
    await s.webhook('app/scopes_update', s.shop.revokeScopes(OTHER_SHOP, ['read_products']), { domain: OTHER_SHOP });
    const noScope = await proxy({ variant_id: SMALL, email: 'guest@example.com' }, { shop: OTHER_SHOP });
    expect([noScope.status, noScope.body.error.code]).toEqual([503, 'not_available']);
    await s.webhook('app/scopes_update', s.shop.grantScopes(OTHER_SHOP, ['read_products']), { domain: OTHER_SHOP });
  });

  it('answers other methods 405, other types 415, an oversized form 413 and broken JSON 400, all as JSON', async () => {
    const get = await proxy(null, { method: 'GET' });
    expect([get.status, get.body.error.code, get.headers.get('allow')]).toEqual([405, 'method_not_allowed', 'POST']);
    const plain = await proxy('variant_id=45105', { contentType: 'text/plain' });
    expect([plain.status, plain.body.error.code]).toEqual([415, 'unsupported_media_type']);
    const big = await proxy({ variant_id: SMALL, email: 'big@example.com', padding: 'x'.repeat(9000) });
    expect([big.status, big.body.error.code]).toEqual([413, 'payload_too_large']);
    const broken = await proxy('{"variant_id": ', { json: true });
    expect([broken.status, broken.body.error.code]).toEqual([400, 'bad_request']);
    // the signature is checked before the body is read
    const unsigned = await proxy('x'.repeat(9000), { contentType: 'text/plain', query: (q) => q.delete('signature') });
    expect(unsigned.status).toBe(401);
  });

  it('customers/data_request exports the subscriptions of the email and of the customer id; customers/redact erases them', async () => {
    await proxy({ variant_id: SMALL, email: 'Redact.Me@example.com' });
    s.shop.setInventory(DEFAULT_SHOP, MEDIUM, 0);
    await proxy({ variant_id: MEDIUM }, { customerId: CUSTOMER.id });
    const keep = (await rows({ email: 'guest.one@example.com' })).length;
    expect(keep).toBe(1);

    const request = (customer: { id: number | null; email: string | null }, id: number) => ({
      shop_id: 548380009,
      shop_domain: DEFAULT_SHOP,
      customer: { ...customer, phone: null },
      orders_requested: [],
      data_request: { id },
    });
    const exported = async (id: number) =>
      JSON.parse((await s.app.db.dataExport.findUniqueOrThrow({ where: { shopId_requestId: { shopId, requestId: String(id) } } })).content)
        .back_in_stock.subscriptions as Array<{ variant_id: string; email: string }>;
    expect((await s.webhook('customers/data_request', request({ id: null, email: 'redact.me@EXAMPLE.com' }, 7101))).status).toBe(200);
    expect((await exported(7101)).map((x) => [x.variant_id, x.email])).toEqual([[SMALL, 'redact.me@example.com']]);
    expect((await s.webhook('customers/data_request', request({ id: Number(CUSTOMER.id), email: null }, 7102))).status).toBe(200);
    expect((await exported(7102)).map((x) => [x.variant_id, x.email])).toEqual([
      [SMALL, 'logged.in@example.com'],
      [MEDIUM, 'logged.in@example.com'],
    ]);

    const redact = (customer: { id: number | null; email: string | null }) => ({
      shop_id: 548380009,
      shop_domain: DEFAULT_SHOP,
      customer: { ...customer, phone: null },
      orders_to_redact: [],
    });
    expect((await s.webhook('customers/redact', redact({ id: null, email: 'REDACT.ME@example.com' }))).status).toBe(200);
    expect(await rows({ email: 'redact.me@example.com' })).toEqual([]);
    expect((await s.webhook('customers/redact', redact({ id: Number(CUSTOMER.id), email: 'changed.since@example.com' }))).status).toBe(200);
    expect(await rows({ customerId: CUSTOMER.id })).toEqual([]);
    expect(await rows({ email: 'logged.in@example.com' })).toEqual([]);
    // nobody else's
    expect(await rows({ email: 'guest.one@example.com' })).toHaveLength(keep);
  });

  it('shop/redact erases the shop’s subscriptions and no other shop’s', async () => {
    const subscribed = await proxy({ variant_id: SMALL, email: 'other.guest@example.com' }, { shop: OTHER_SHOP });
    expect([subscribed.status, subscribed.body]).toEqual([201, expect.objectContaining({ ok: true })]);
    expect(await s.app.db.stockSubscription.count({ where: { shopId: otherShopId } })).toBe(1);
    const mine = await s.app.db.stockSubscription.count({ where: { shopId } });
    expect(mine).toBeGreaterThan(0);
    expect((await s.webhook('shop/redact', { shop_id: 1, shop_domain: OTHER_SHOP }, { domain: OTHER_SHOP })).status).toBe(200);
    expect(await s.app.db.stockSubscription.count({ where: { shopId: otherShopId } })).toBe(0);
    expect(await s.app.db.stockSubscription.count({ where: { shopId } })).toBe(mine);
  });

  it('the sweep deletes subscriptions past their expiry and keeps the others', async () => {
    const now = Date.now();
    const base = {
      shopId,
      variantId: SMALL,
      productId: SOCKS,
      customerId: null,
      source: 'guest',
      createdAt: new Date(now - 100 * 86_400_000),
    };
    await s.app.db.stockSubscription.create({
      data: { ...base, email: 'expired@example.com', renewedAt: base.createdAt, expiresAt: new Date(now - 60_000) },
    });
    const live = await s.app.db.stockSubscription.count({ where: { expiresAt: { gt: new Date(now) } } });
    expect(await s.app.sweepStockSubscriptions()).toBe(1);
    expect(await rows({ email: 'expired@example.com' })).toEqual([]);
    expect(await s.app.db.stockSubscription.count()).toBe(live);
  });
});
