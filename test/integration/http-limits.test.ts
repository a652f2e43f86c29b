// The HTTP servers' limits on a client (HTTP_*_TIMEOUT_MS): a client that sends its headers or its
// body slowly (slowloris) is cut off within its timeout, while a kept-alive connection may idle
// longer than the headers timeout between requests.
import net from 'node:net';
import { TIMEOUT_CHECK_MS } from '../../src/http/app';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer } from '../../src/app/server';
import { testConfig } from '../helpers/config';
import { createTestDatabase, testProvider, type TestDatabase } from '../helpers/db';

// A real socket's timeout, so real time: the server closes the connection once its check (every
// TIMEOUT_CHECK_MS) finds it past the configured timeout, never before it. The next limit that
// would close it otherwise is ten times later: the request timeout, on the server whose headers
// timeout is tested, and Node's own 300 s for the other. A close between the two is the setting
// at work on any machine; being ten times late would take a loop stalled for seconds.
const LATE = 10;
const HEADERS_MS = 1_000;
const REQUEST_MS = 2_000;

interface Trickle {
  /** When the server closed the connection, in ms after it opened (null: still open at the end). */
  closedAfterMs: number | null;
  answer: string;
}

/** Opens a connection, writes `head`, then one `drip` every 200 ms until the server closes it or `giveUpMs` pass. */
function trickle(port: number, head: string, drip: (i: number) => string, giveUpMs: number): Promise<Trickle> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const opened = Date.now();
    let answer = '';
    let i = 0;
    const timer = setInterval(() => {
      if (!socket.destroyed && socket.writable) socket.write(drip(i++));
    }, 200);
    const giveUp = setTimeout(() => finish(null), giveUpMs);
    function finish(closedAfterMs: number | null) {
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ closedAfterMs, answer });
    }
    socket.on('connect', () => socket.write(head));
    socket.on('data', (d) => (answer += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => finish(Date.now() - opened));
  });
}

describe(`HTTP limits on a client (${testProvider})`, () => {
  let database: TestDatabase;
  /** Headers timeout 1 s, request timeout 10 s. */
  let app: RunningServer;
  /** Request timeout 2 s. */
  let requests: RunningServer;
  beforeAll(async () => {
    database = await createTestDatabase();
    const start = (headersMs: number, requestMs: number) =>
      startServer(
        testConfig(database.url, {
          ROLE: 'web',
          HTTP_HEADERS_TIMEOUT_MS: String(headersMs),
          HTTP_REQUEST_TIMEOUT_MS: String(requestMs),
          HTTP_KEEP_ALIVE_TIMEOUT_MS: '5000',
        }),
        { logger: createLogger('silent'), host: '127.0.0.1' },
      );
    app = await start(HEADERS_MS, LATE * HEADERS_MS);
    requests = await start(HEADERS_MS, REQUEST_MS);
  });
  afterAll(async () => {
    await app?.close();
    await requests?.close();
    await database.drop();
  });

  it('cuts off a client that sends its headers slowly, with 408, at the headers timeout', async () => {
    const r = await trickle(app.port, 'POST /webhooks HTTP/1.1\r\nHost: connector\r\n', (i) => `X-Slow-${i}: y\r\n`, LATE * HEADERS_MS);
    // closed before ten times its timeout, and not before the timeout
    expect(r.closedAfterMs).not.toBeNull();
    expect(r.closedAfterMs!).toBeGreaterThanOrEqual(HEADERS_MS - 100);
    expect(r.answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('cuts off a client that sends its body slowly, with 408, at the request timeout', async () => {
    const head = 'POST /webhooks HTTP/1.1\r\nHost: connector\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n';
    const r = await trickle(requests.port, head, () => ' ', LATE * REQUEST_MS);
    // closed before ten times its timeout, and not before the timeout
    expect(r.closedAfterMs).not.toBeNull();
    expect(r.closedAfterMs!).toBeGreaterThanOrEqual(REQUEST_MS - 100);
    expect(r.answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('keeps a connection that idles longer than the headers timeout between two requests', async () => {
    const socket = net.connect(app.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let answer = '';
    socket.on('data', (d) => (answer += d.toString()));
    let closed = false;
    socket.on('close', () => (closed = true));
    const ask = async () => {
      answer = '';
      socket.write('GET /healthz HTTP/1.1\r\nHost: connector\r\n\r\n');
      for (const end = Date.now() + 3_000; !answer.includes('"status":"ok"') && Date.now() < end;)
        await new Promise((r) => setTimeout(r, 20));
      return answer;
    };
    try {
      expect(await ask()).toMatch(/^HTTP\/1\.1 200 /);
      await new Promise((r) => setTimeout(r, HEADERS_MS + TIMEOUT_CHECK_MS + 500));
      expect(closed).toBe(false);
      expect(await ask()).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      socket.destroy();
    }
  });
});
