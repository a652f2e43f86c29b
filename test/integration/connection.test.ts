import fs from 'node:fs';
import { DEFAULT_SHOP, startStack, type Stack } from '../helpers/stack';
import { testProvider } from '../helpers/db';
import { dumpAllTables, tablesContaining } from '../helpers/rows';

describe(`connecting a shop to its workspace (${testProvider})`, () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(() => s.close());

  it('starts disconnected after an embedded install', async () => {
    const res = await s.api('GET', '/api/connection');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'disconnected', workspace_id: null, key_hint: null });
  });

  it('refuses a key the service rejects with 422 and stores nothing', async () => {
    const res = await s.api('PUT', '/api/connection', { api_key: 'sk_wrong_key_000000' });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'invalid_key', message: expect.stringMatching(/refused by the service/) });
    expect(await s.app.db.connection.count()).toBe(0);
  });

  it('answers 400 with a clear message to a malformed body', async () => {
    expect((await s.api('PUT', '/api/connection', { key: 'x' })).status).toBe(400);
    expect((await s.api('PUT', '/api/connection', '{"api_key":')).body.error.code).toBe('invalid_json');
    expect((await s.api('PUT', '/api/connection', { api_key: 'short' })).body.error.message).toMatch(
      /api_key: the API key looks too short/,
    );
  });

  it('binds the shop to the workspace the service returns, with the shop id and name from Shopify', async () => {
    const ws = s.emulator.createWorkspace({ name: 'Acme Mail' });
    const res = await s.api('PUT', '/api/connection', { api_key: ws.apiKey });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'connected',
      workspace_id: ws.id,
      workspace_name: 'Acme Mail',
      key_hint: `…${ws.apiKey.slice(-4)}`,
    });
    expect(s.emulator.shops(ws.id)).toEqual({ '548380009': 'Demo Store' });
    const validate = s.emulator.requests().filter((r) => r.path.includes('api_key/validate'));
    expect(validate.at(-1)?.headers.authorization).toBeDefined();
  });

  it('never reveals the key through the API, and keeps it unreadable in the database', async () => {
    const ws = s.emulator.createWorkspace({ name: 'Secret Mail' });
    await s.api('PUT', '/api/connection', { api_key: ws.apiKey });
    const get = await s.api('GET', '/api/connection');
    expect(JSON.stringify(get.body)).not.toContain(ws.apiKey);
    expect(await tablesContaining(s.app.db, ws.apiKey)).toEqual([]);
    if (testProvider === 'sqlite') {
      const file = s.database.url.replace(/^file:/, '');
      for (const f of [file, `${file}-wal`].filter((p) => fs.existsSync(p))) {
        expect(fs.readFileSync(f).includes(Buffer.from(ws.apiKey))).toBe(false);
      }
    }
  });

  it('leaves an existing connection unchanged when a new key is refused', async () => {
    const before = await s.api('GET', '/api/connection');
    expect((await s.api('PUT', '/api/connection', { api_key: 'sk_another_wrong_key' })).status).toBe(422);
    expect((await s.api('GET', '/api/connection')).body).toEqual(before.body);
  });

  it('answers 502 when the service is down, and changes nothing', async () => {
    const before = await s.api('GET', '/api/connection');
    const ws = s.emulator.createWorkspace({ name: 'Unreachable' });
    s.emulator.injectFault({ mode: 'status500', count: 5 });
    const res = await s.api('PUT', '/api/connection', { api_key: ws.apiKey });
    s.emulator.clearFaults();
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('service_unavailable');
    expect((await s.api('GET', '/api/connection')).body).toEqual(before.body);
  });

  it('lists the workspace mailing lists and custom fields from the service', async () => {
    const lists = await s.api('GET', '/api/lists');
    expect(lists.status).toBe(200);
    expect(lists.body.lists.length).toBeGreaterThan(0);
    expect(lists.body.lists[0]).toEqual(expect.objectContaining({ id: expect.any(String), name: expect.any(String) }));
    const fields = await s.api('GET', '/api/custom-fields');
    expect(fields.body.custom_fields[0]).toEqual(expect.objectContaining({ key: expect.any(String) }));
  });

  it('the periodic key check flips the status to invalid_key when the key is revoked, and holds deliveries', async () => {
    const ws = s.emulator.createWorkspace({ name: 'Revocable' });
    await s.api('PUT', '/api/connection', { api_key: ws.apiKey });
    s.emulator.revokeKey(ws.apiKey);
    await s.app.db.connection.updateMany({ data: { lastCheckedAt: new Date(Date.now() - 2 * 3_600_000) } });
    // a key checked less than an hour ago is not checked again
    await s.app.db.connection.updateMany({ data: { lastCheckedAt: new Date() } });
    expect(await s.app.checkKeys()).toEqual({ checked: 0, invalid: 0, failed: 0 });
    await s.app.db.connection.updateMany({ data: { lastCheckedAt: new Date(Date.now() - 2 * 3_600_000) } });
    expect(await s.app.checkKeys()).toEqual({ checked: 1, invalid: 1, failed: 0 });
    expect((await s.api('GET', '/api/connection')).body.status).toBe('invalid_key');
    await s.webhook('orders/create', s.raw('orders-create'), { webhookId: 'wh-while-invalid' });
    const held = await s.app.db.outboxMessage.findFirstOrThrow({ where: { sourceId: 'wh-while-invalid' } });
    expect(held).toMatchObject({ status: 'held', heldReason: 'invalid_key' });
    // saving a valid key resumes what was held
    const fresh = s.emulator.createWorkspace({ name: 'Fixed' });
    await s.api('PUT', '/api/connection', { api_key: fresh.apiKey });
    await s.until(
      () => s.emulator.events({ workspaceId: fresh.id }).filter((e) => e.event_attribute.source_id === 'wh-while-invalid'),
      5000,
      'held event resumed',
    );
  });

  it('uninstall deletes sessions and holds deliveries; shop/redact then leaves no row for the shop in any table', async () => {
    await s.webhook('customers/create', s.raw('customers-create'), { webhookId: 'wh-before-uninstall' });
    await s.webhook('app/uninstalled', s.fixture('app-uninstalled'), { webhookId: 'wh-uninstall' });
    expect(await s.app.db.session.count({ where: { shop: DEFAULT_SHOP } })).toBe(0);
    const shop = await s.app.db.shop.findUniqueOrThrow({ where: { domain: DEFAULT_SHOP } });
    expect(shop.uninstalledAt).not.toBeNull();
    expect(await s.app.db.connection.count()).toBe(1); // merchant data is kept until shop/redact
    expect((await s.webhook('shop/redact', s.fixture('shop-redact'), { webhookId: 'wh-shop-redact' })).status).toBe(200);
    const all = await dumpAllTables(s.app.db);
    for (const [table, text] of Object.entries(all)) {
      expect({ table, hasShop: text.includes(DEFAULT_SHOP) || text.includes(shop.id) }).toEqual({ table, hasShop: false });
    }
  });
});
