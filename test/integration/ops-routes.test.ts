// The operations routes under load and behind protection: scrapes share cached gauge reads,
// METRICS_TOKEN guards /metrics, OPS_PORT moves the routes off the public port.
import { createHmac } from 'node:crypto';
import { createLogger } from '../../src/observability/logger';
import { GAUGE_MAX_AGE_MS } from '../../src/observability/metrics';
import { startServer, type RunningServer } from '../../src/app/server';
import { sampleOrder } from '../../sandbox/samples';
import { TestClock } from '../helpers/clock';
import { testConfig } from '../helpers/config';
import { createTestDatabase, testProvider, type TestDatabase } from '../helpers/db';
import { countStatements, type StatementCounter } from '../helpers/statements';

const TOKEN = 'metrics-token-0123456789abcdef';
const SECRET = 'ops-test-secret-0123456789';

const isClassQueueRead = (sql: string) => /MIN\("dueAt"\) AS oldest/.test(sql);
const isQueueDepthRead = (sql: string) => /GROUP BY/i.test(sql) && /OutboxMessage/.test(sql) && !isClassQueueRead(sql);
const isLagRead = (sql: string) => /COUNT\(\*\) AS "n", MIN\("receivedAt"\)/.test(sql);

async function scrape(url: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}/metrics`, { headers });
  return { status: res.status, text: await res.text() };
}

const pendingOf = (text: string) => Number(/^connector_receipts_pending (\d+)$/m.exec(text)?.[1]);

/** A signed orders/create webhook, as Shopify sends it. */
async function sendWebhook(url: string, id: string): Promise<number> {
  const body = JSON.stringify(sampleOrder(1));
  const res = await fetch(`${url}/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-shopify-hmac-sha256': createHmac('sha256', SECRET).update(body).digest('base64'),
      'x-shopify-topic': 'orders/create',
      'x-shopify-shop-domain': 'ops.myshopify.com',
      'x-shopify-webhook-id': id,
      'x-shopify-api-version': '2026-10',
    },
    body,
  });
  return res.status;
}

describe(`operations routes (${testProvider})`, () => {
  let database: TestDatabase;
  const running: RunningServer[] = [];
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  // each app holds its own connections (PostgreSQL has a hundred for every test run at once): close them as soon as done
  const closeRunning = () => Promise.all(running.splice(0).map((r) => r.close()));
  afterAll(async () => {
    await closeRunning();
    await database.drop();
  });

  async function start(env: Record<string, string>, opts: { now?: () => Date } = {}): Promise<RunningServer> {
    const config = testConfig(database.url, { SHOPIFY_API_SECRET: SECRET, DATABASE_POOL_SIZE: '2', ...env });
    const app = await startServer(config, { logger: createLogger('silent'), host: '127.0.0.1', ...opts });
    running.push(app);
    return app;
  }

  describe('gauges read from the database', () => {
    let app: RunningServer;
    let statements: { queue: StatementCounter; lag: StatementCounter; classes: StatementCounter };
    const clock = new TestClock();
    beforeAll(async () => {
      // web only: stage 2 leaves receipts pending, so the lag gauge has something to show
      app = await start({ ROLE: 'web' }, { now: clock.now });
      statements = {
        queue: countStatements(isQueueDepthRead),
        lag: countStatements(isLagRead),
        classes: countStatements(isClassQueueRead),
      };
    });
    afterAll(async () => {
      statements.queue.restore();
      statements.lag.restore();
      statements.classes.restore();
      await closeRunning();
    });
    const reads = () => ({ queue: statements.queue.count(), lag: statements.lag.count(), classes: statements.classes.count() });

    it('100 concurrent scrapes cost one read of each gauge, and more scrapes within 15 s none', async () => {
      const first = await Promise.all(Array.from({ length: 100 }, () => scrape(app.url)));
      expect(first.map((r) => r.status)).toEqual(Array(100).fill(200));
      for (const r of first) expect(r.text).toMatch(/^connector_outbox_messages\{status="queued"\} 0$/m);
      expect(reads()).toEqual({ queue: 1, lag: 1, classes: 1 });

      // a third of the way: the scrapes above took real time too
      clock.advance(GAUGE_MAX_AGE_MS / 3);
      const again = await Promise.all(Array.from({ length: 100 }, () => scrape(app.url)));
      expect(again.map((r) => r.status)).toEqual(Array(100).fill(200));
      expect(reads()).toEqual({ queue: 1, lag: 1, classes: 1 });
    });

    it('past 15 s, scrapes answer at once with the last values, and one read in the background brings the new ones', async () => {
      expect(await sendWebhook(app.url, 'ops-1')).toBe(200);
      expect(pendingOf((await scrape(app.url)).text)).toBe(0); // cached: the receipt is not counted yet
      expect(reads()).toEqual({ queue: 1, lag: 1, classes: 1 });

      clock.advance(GAUGE_MAX_AGE_MS + 1_000);
      // the first scrape past the age answers with what it has, without waiting for the read it starts
      expect(pendingOf((await scrape(app.url)).text)).toBe(0);
      const more = await Promise.all(Array.from({ length: 99 }, () => scrape(app.url)));
      expect(more.map((r) => r.status)).toEqual(Array(99).fill(200));
      // the 100 scrapes past the age started one read of each between them
      expect(reads()).toEqual({ queue: 2, lag: 2, classes: 2 });
      const deadline = Date.now() + 5_000;
      let pending = 0;
      while (pending !== 1 && Date.now() < deadline) {
        pending = pendingOf((await scrape(app.url)).text);
        if (pending !== 1) await new Promise((r) => setTimeout(r, 20));
      }
      expect(pending).toBe(1);
      expect(reads()).toEqual({ queue: 2, lag: 2, classes: 2 });
    });
  });

  describe('METRICS_TOKEN', () => {
    let app: RunningServer;
    beforeAll(async () => {
      app = await start({ METRICS_TOKEN: TOKEN });
    });
    afterAll(closeRunning);

    it('/metrics answers 401 without the bearer token, or with another, and says nothing of it', async () => {
      const wrong = TOKEN.slice(0, -1) + (TOKEN.endsWith('f') ? 'e' : 'f');
      const attempts: Array<Record<string, string>> = [
        {},
        { authorization: `Bearer ${wrong}` },
        { authorization: `Bearer ${TOKEN}x` },
        { authorization: `Basic ${TOKEN}` },
        { authorization: TOKEN },
      ];
      for (const headers of attempts) {
        const res = await fetch(`${app.url}/metrics`, { headers });
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
        const text = await res.text();
        expect(text).not.toContain(TOKEN);
        expect(text).not.toContain('connector_');
      }
    });

    it('/metrics answers the Prometheus text with the token; /healthz and /readyz need none', async () => {
      const res = await scrape(app.url, { authorization: `Bearer ${TOKEN}` });
      expect(res.status).toBe(200);
      expect(res.text).toContain('connector_webhooks_received_total');
      expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
    });
  });

  describe('OPS_PORT', () => {
    afterEach(closeRunning);

    it('serves /readyz and /metrics on the operations port only, and /healthz on both', async () => {
      const app = await start({ OPS_PORT: '0', METRICS_TOKEN: TOKEN });
      expect(app.opsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(app.opsUrl).not.toBe(app.url);
      const ops = app.opsUrl!;
      const auth = { authorization: `Bearer ${TOKEN}` };

      expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${app.url}/readyz`)).status).toBe(404);
      expect((await fetch(`${app.url}/metrics`, { headers: auth })).status).toBe(404);
      // the public routes stay where they were
      expect(await sendWebhook(app.url, 'ops-port-1')).toBe(200);

      expect((await fetch(`${ops}/healthz`)).status).toBe(200);
      expect((await fetch(`${ops}/readyz`)).status).toBe(200);
      expect((await fetch(`${ops}/metrics`)).status).toBe(401);
      expect((await scrape(ops, auth)).text).toMatch(/^connector_webhooks_received_total\{topic="orders\/create",outcome="accepted"\} 1$/m);
      // and nothing else is served there
      expect(await sendWebhook(ops, 'ops-port-2')).toBe(404);
      expect((await fetch(`${ops}/api/connection`)).status).toBe(404);
    });

    it('a worker process serves the operations routes on its port, or on the operations port when set', async () => {
      const plain = await start({ ROLE: 'worker' });
      expect(plain.opsUrl).toBeUndefined();
      for (const route of ['/healthz', '/readyz', '/metrics']) expect((await fetch(`${plain.url}${route}`)).status).toBe(200);
      expect(await sendWebhook(plain.url, 'worker-1')).toBe(404);

      const split = await start({ ROLE: 'worker', OPS_PORT: '0' });
      expect((await fetch(`${split.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${split.url}/metrics`)).status).toBe(404);
      for (const route of ['/healthz', '/readyz', '/metrics']) expect((await fetch(`${split.opsUrl}${route}`)).status).toBe(200);
    });
  });
});
