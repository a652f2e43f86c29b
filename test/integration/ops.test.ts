import request from 'supertest';
import { startServer, type RunningServer } from '../../src/app/server';
import { createLogger } from '../../src/observability/logger';
import { testConfig } from '../helpers/config';
import { createTestDatabase, type TestDatabase } from '../helpers/db';

describe('operations endpoints', () => {
  let database: TestDatabase;
  let app: RunningServer;
  beforeAll(async () => {
    database = await createTestDatabase();
    app = await startServer(testConfig(database.url), { logger: createLogger('silent'), host: '127.0.0.1' });
  });
  afterAll(async () => {
    await app.close();
    await database.drop();
  });

  it('GET /healthz answers 200 while the process is alive', async () => {
    const res = await request(app.url).get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('GET /readyz answers 200 when the database answers', async () => {
    const res = await request(app.url).get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body.database).toBe('ok');
  });

  it('GET /metrics is Prometheus text with the contract metrics', async () => {
    const res = await request(app.url).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/plain/);
    for (const name of [
      'connector_webhooks_received_total',
      'connector_deliveries_total',
      'connector_outbox_messages',
      'connector_delivery_latency_seconds',
      'connector_service_429_total',
    ]) {
      expect(res.text).toContain(name);
    }
    expect(res.text).toMatch(/connector_outbox_messages\{status="queued"\} 0/);
  });

  it('any /api route without a session token gets 401, the retry header and the contract error body', async () => {
    const res = await request(app.url).get('/api/nope');
    expect(res.status).toBe(401);
    expect(res.headers['x-shopify-retry-invalid-session-request']).toBe('1');
    expect(res.body).toEqual({ error: { code: expect.any(String), message: expect.any(String) } });
  });

  it('GET /readyz answers 503 once the database is gone', async () => {
    await app.db.$disconnect();
    // a disconnected Prisma client reconnects lazily, so break the database itself
    await database.drop();
    const res = await request(app.url).get('/readyz');
    expect(res.status).toBe(503);
  });
});
