// createHttpServer: requests and responses are born with the app's prototypes, so express's
// Object.setPrototypeOf on each of them changes nothing (see src/http/app.ts), and express works
// on them as before.
import type { AddressInfo } from 'node:net';
import http from 'node:http';
import express from 'express';
import { createHttpServer } from '../../../src/http/app';

describe('createHttpServer', () => {
  it("makes each request and response with the app's own prototypes, before express sees them", async () => {
    const app = express();
    const seen: Array<{ req: boolean; res: boolean; message: boolean }> = [];
    app.post('/echo', express.json(), (req, res) => {
      res
        .status(201)
        .set('x-test', 'yes')
        .json({ got: req.body, path: req.path, ip: typeof req.ip });
    });
    const server = createHttpServer(app);
    // idle connections outlive a load balancer's 60 s
    expect(server.keepAliveTimeout).toBe(65_000);
    // a slow client is cut off well before Node's own limits (60 s for headers, 300 s for a request)
    expect([server.headersTimeout, server.requestTimeout]).toEqual([10_000, 30_000]);
    // a listener that runs before express's: what the objects were made as
    server.prependListener('request', (req, res) => {
      const proto = app as unknown as { request: object; response: object };
      seen.push({
        req: Object.getPrototypeOf(req) === proto.request,
        res: Object.getPrototypeOf(res) === proto.response,
        message: req instanceof http.IncomingMessage && res instanceof http.ServerResponse,
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/echo`;
      for (let i = 0; i < 2; i++) {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i }) });
        expect(res.status).toBe(201);
        expect(res.headers.get('x-test')).toBe('yes');
        expect(await res.json()).toEqual({ got: { n: i }, path: '/echo', ip: 'string' });
      }
      expect(seen).toEqual([
        { req: true, res: true, message: true },
        { req: true, res: true, message: true },
      ]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
