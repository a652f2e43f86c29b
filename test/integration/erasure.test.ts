// Erasure that survives a look at the disk (issue 14, part 1). A redaction removes rows
// logically; these tests look at what is left physically:
// - SQLite: the raw bytes of the database file, its -wal and its -shm must not hold the erased
//   customer's (or shop's) data, while another customer's data is still readable there, which
//   proves the search can see data at all (secure_delete + wal_checkpoint(TRUNCATE), db/erasure.ts).
// - PostgreSQL: deleted rows stay as dead tuples until VACUUM, which runs on the touched tables
//   after the redaction commits: checked through pg_stat_user_tables.last_vacuum.
import fs from 'node:fs';
import pg from 'pg';
import { sqliteFile } from '../../src/db/client';
import { sampleCustomer, sampleOrder } from '../../sandbox/samples';
import { testProvider } from '../helpers/db';
import { startStack, type Stack } from '../helpers/stack';

const onSqlite = testProvider === 'sqlite' ? describe : describe.skip;
const onPostgres = testProvider === 'postgres' ? describe : describe.skip;
const skipNote = (on: string) => (testProvider === on ? '' : ` (skipped: needs ${on}, this run is on ${testProvider})`);

const CUSTOMERS_PER_SHOP = 8;
const ORDERS_PER_CUSTOMER = 25;

/** The database file and the WAL and shared-memory files beside it, as they are on disk now. */
function diskFiles(s: Stack): Record<string, Buffer> {
  const file = sqliteFile(s.database.url);
  const out: Record<string, Buffer> = {};
  for (const f of [file, `${file}-wal`, `${file}-shm`]) if (fs.existsSync(f)) out[f.slice(file.length) || 'db'] = fs.readFileSync(f);
  return out;
}

/**
 * The files whose raw bytes hold `needle`: case-insensitively (bytes read as Latin-1, so every
 * byte is one character), as exact UTF-8 bytes, and as UTF-16 (either byte order).
 */
function filesHolding(files: Record<string, Buffer>, needle: string): string[] {
  const lower = needle.toLowerCase();
  return Object.entries(files)
    .filter(
      ([, bytes]) =>
        bytes.toString('latin1').toLowerCase().includes(lower) ||
        bytes.includes(Buffer.from(needle, 'utf8')) ||
        bytes.includes(Buffer.from(needle, 'utf16le')) ||
        bytes.includes(Buffer.from(needle, 'utf16le').swap16()),
    )
    .map(([name]) => name);
}

/** Where a needle sits (file, offset, 4 KiB block, the bytes around it): printed when a check fails. */
function whereOnDisk(files: Record<string, Buffer>, needle: string): string {
  const lines: string[] = [];
  for (const [name, bytes] of Object.entries(files)) {
    const text = bytes.toString('latin1').toLowerCase();
    for (let at = text.indexOf(needle.toLowerCase()); at >= 0 && lines.length < 20; at = text.indexOf(needle.toLowerCase(), at + 1)) {
      const around = bytes
        .subarray(Math.max(0, at - 120), at + needle.length + 60)
        .toString('latin1')
        .replace(/[^\x20-\x7e]/g, '.');
      lines.push(`${name} offset ${at} (4 KiB block ${Math.floor(at / 4096)}): ${around}`);
    }
  }
  return `"${needle}" on disk:\n${lines.join('\n')}`;
}

/** Fills `domain` with customers first..first+CUSTOMERS_PER_SHOP-1 and their orders, all delivered. */
async function fill(
  s: Stack,
  domain: string,
  first: number,
): Promise<{ workspaceId: string; customers: Array<ReturnType<typeof sampleCustomer>>; orderIds: Map<number, number[]> }> {
  const ws = await s.connectShop(domain, { rateLimit: 1000 });
  const customers = Array.from({ length: CUSTOMERS_PER_SHOP }, (_, i) => sampleCustomer(first + i, domain));
  const orderIds = new Map<number, number[]>();
  const hooks: Array<{ topic: string; payload: unknown; id: string }> = [];
  customers.forEach((c, i) => {
    const n = first + i;
    hooks.push({ topic: 'customers/create', payload: c, id: `${domain}-c-${n}` });
    for (let k = 0; k < ORDERS_PER_CUSTOMER; k++) {
      const order = sampleOrder(n * 100 + k, { customer: n });
      orderIds.set(n, [...(orderIds.get(n) ?? []), order.id]);
      hooks.push({ topic: 'orders/create', payload: order, id: `${domain}-o-${n}-${k}` });
    }
  });
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < hooks.length) {
        const h = hooks[next++]!;
        const res = await s.shop.sendWebhook(s.app.url, { topic: h.topic, shopDomain: domain, payload: h.payload, webhookId: h.id });
        if (res.status !== 200) throw new Error(`webhook ${h.id} got ${res.status}`);
      }
    }),
  );
  await s.settle(30_000);
  await s.until(
    () => s.emulator.events({ workspaceId: ws.workspaceId }).length >= hooks.length,
    30_000,
    `${hooks.length} events delivered for ${domain}`,
  );
  // the service has them; their deliveries (and attempts) are recorded just after its answers
  await s.until(
    async () => (await s.app.db.outboxMessage.count({ where: { status: 'delivering' } })) === 0,
    10_000,
    `deliveries recorded for ${domain}`,
  );
  return { workspaceId: ws.workspaceId, customers, orderIds };
}

onSqlite(`erasure on disk, SQLite${skipNote('sqlite')}`, () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(async () => {
    await s?.close();
  });

  it('customers/redact leaves neither the email nor the phone in the database file, its WAL or its shm', async () => {
    const domain = 'erase-customer.myshopify.com';
    const { workspaceId, customers, orderIds } = await fill(s, domain, 1);
    // customer 4 has a phone (sampleCustomer gives every fourth one)
    const gone = customers.find((c) => c.phone !== null)!;
    const kept = customers.find((c) => c !== gone)!;
    const goneNo = Number(gone.id) - 7_000_000_000_000;
    expect(gone.phone).toMatch(/^\+1555\d{7}$/);
    const rows = {
      receipts: await s.app.db.webhookReceipt.count(),
      messages: await s.app.db.outboxMessage.count(),
      attempts: await s.app.db.deliveryAttempt.count(),
      orders: await s.app.db.orderSummary.count(),
      profiles: await s.app.db.customerProfile.count(),
    };
    expect(rows.receipts).toBeGreaterThanOrEqual(200);
    expect(rows.messages).toBeGreaterThanOrEqual(200);
    expect(rows.attempts).toBeGreaterThanOrEqual(200);
    expect(rows.orders).toBe(CUSTOMERS_PER_SHOP * ORDERS_PER_CUSTOMER);
    expect(rows.profiles).toBe(CUSTOMERS_PER_SHOP);
    // before: the search sees the customer to be erased (or the check would prove nothing)
    expect(filesHolding(diskFiles(s), gone.email)).not.toEqual([]);
    expect(filesHolding(diskFiles(s), gone.phone!)).not.toEqual([]);

    const res = await s.webhook(
      'customers/redact',
      {
        shop_id: Number(s.shop.getShop(domain)!.id),
        shop_domain: domain,
        customer: { id: gone.id, email: gone.email.toUpperCase(), phone: gone.phone },
        orders_to_redact: orderIds.get(goneNo),
      },
      { domain, webhookId: 'erase-customer-redact' },
    );
    expect(res.status).toBe(200);
    // the contact delete holds the address until it is sent; then its row keeps none
    await s.until(() => s.emulator.deletedContacts(workspaceId).includes(gone.email), 10_000, 'contact deleted at the service');
    await s.until(
      async () => (await s.app.db.outboxMessage.count({ where: { kind: 'contact_delete', status: 'delivered', email: null } })) === 1,
      10_000,
      'contact delete recorded',
    );

    // after: nowhere on disk (the erasure may still be finishing its checkpoint: poll briefly)
    const leftovers = async () => {
      const files = diskFiles(s);
      return {
        email: filesHolding(files, gone.email),
        phone: filesHolding(files, gone.phone!),
        phoneDigits: filesHolding(files, gone.phone!.slice(1)),
      };
    };
    let left = await leftovers();
    for (const end = Date.now() + 5000; Date.now() < end && Object.values(left).some((f) => f.length > 0);) {
      await new Promise((r) => setTimeout(r, 100));
      left = await leftovers();
    }
    if (Object.values(left).some((f) => f.length > 0)) console.log(whereOnDisk(diskFiles(s), gone.email));
    expect(left).toEqual({ email: [], phone: [], phoneDigits: [] });
    // …while another customer of the same shop is still there to be seen
    expect(filesHolding(diskFiles(s), kept.email)).toContain('db');
    expect(await s.app.db.orderSummary.count()).toBe((CUSTOMERS_PER_SHOP - 1) * ORDERS_PER_CUSTOMER);
  }, 90_000);

  it("shop/redact leaves neither the shop domain nor its customers' emails on disk", async () => {
    const domain = 'erase-whole-shop.myshopify.com';
    const keptDomain = 'erase-kept-shop.myshopify.com';
    const erased = await fill(s, domain, 101);
    const kept = await fill(s, keptDomain, 201);
    expect(filesHolding(diskFiles(s), domain)).not.toEqual([]);
    expect(filesHolding(diskFiles(s), erased.customers[0]!.email)).not.toEqual([]);

    await s.webhook('app/uninstalled', { id: 1, domain, myshopify_domain: domain }, { domain, webhookId: 'erase-shop-uninstalled' });
    const res = await s.webhook(
      'shop/redact',
      { shop_id: Number(s.shop.getShop(domain)!.id), shop_domain: domain },
      { domain, webhookId: 'erase-shop-redact' },
    );
    expect(res.status).toBe(200);
    expect(await s.app.db.shop.count({ where: { domain } })).toBe(0);

    const needles = [domain, ...erased.customers.map((c) => c.email)];
    const leftovers = () => {
      const files = diskFiles(s);
      return Object.fromEntries(needles.map((n) => [n, filesHolding(files, n)]).filter(([, f]) => f!.length > 0));
    };
    let left = leftovers();
    for (const end = Date.now() + 5000; Date.now() < end && Object.keys(left).length > 0;) {
      await new Promise((r) => setTimeout(r, 100));
      left = leftovers();
    }
    if (Object.keys(left).length > 0) console.log(whereOnDisk(diskFiles(s), Object.keys(left)[0]!));
    expect(left).toEqual({});
    expect(filesHolding(diskFiles(s), keptDomain)).toContain('db');
    expect(filesHolding(diskFiles(s), kept.customers[0]!.email)).toContain('db');
  }, 120_000);
});

onPostgres(`erasure on disk, PostgreSQL${skipNote('postgres')}`, () => {
  let s: Stack;
  let stats: pg.Client;
  beforeAll(async () => {
    s = await startStack();
    stats = new pg.Client({ connectionString: s.database.url });
    await stats.connect();
  });
  afterAll(async () => {
    await stats?.end();
    await s?.close();
  });

  /** last_vacuum of each table, read fresh (statistics are cached per transaction otherwise). */
  async function lastVacuum(tables: string[]): Promise<Record<string, Date | null>> {
    await stats.query('SELECT pg_stat_clear_snapshot()');
    const r = await stats.query<{ relname: string; last_vacuum: Date | null }>(
      'SELECT relname, last_vacuum FROM pg_stat_user_tables WHERE relname = ANY($1)',
      [tables],
    );
    return Object.fromEntries(tables.map((t) => [t, r.rows.find((x) => x.relname === t)?.last_vacuum ?? null]));
  }

  it('shop/redact vacuums the tables it touched, after the commit', async () => {
    const domain = 'vacuum-shop.myshopify.com';
    await fill(s, domain, 301);
    const tables = ['OutboxMessage', 'WebhookReceipt', 'DeliveryAttempt', 'OrderSummary', 'CustomerProfile'];
    const before = await lastVacuum(tables);
    const rows = await stats.query<{ n: string }>(
      `SELECT count(*) AS n FROM "OutboxMessage" m JOIN "Shop" s ON s.id = m."shopId" WHERE s.domain = $1`,
      [domain],
    );
    expect(Number(rows.rows[0]!.n)).toBeGreaterThanOrEqual(200);

    await s.webhook('app/uninstalled', { id: 1, domain, myshopify_domain: domain }, { domain, webhookId: 'vacuum-uninstalled' });
    const startedAt = new Date();
    const res = await s.webhook(
      'shop/redact',
      { shop_id: Number(s.shop.getShop(domain)!.id), shop_domain: domain },
      { domain, webhookId: 'vacuum-redact' },
    );
    expect(res.status).toBe(200);
    expect(await s.app.db.shop.count({ where: { domain } })).toBe(0);

    // the statistics of a VACUUM show up shortly after it ends: poll
    const after = await s.until(
      async () => {
        const v = await lastVacuum(tables);
        return tables.every(
          (t) =>
            v[t] !== null &&
            v[t]!.getTime() >= startedAt.getTime() - 1000 &&
            (before[t] === null || v[t]!.getTime() > before[t]!.getTime()),
        )
          ? v
          : null;
      },
      15_000,
      'last_vacuum of the redacted tables',
    );
    for (const t of tables) expect(after[t]).toBeInstanceOf(Date);
  }, 90_000);
});
