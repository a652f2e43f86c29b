// Bulk operations for the fake shop: bulkOperationRunQuery over generated customers and orders
// (sandbox/samples.ts), currentBulkOperation / node(id:) going RUNNING → COMPLETED after a
// delay, bulkOperationCancel, customersCount / ordersCount, and the JSONL result served by a
// small "storage" server of its own (Shopify's result URLs are on Google Cloud Storage, not on
// the shop). The file is generated on the fly and streamed, with Range support, so a 50 MB
// result costs no memory. Faults for tests: a failed operation, a download cut short, an
// expired result URL, a server that ignores Range.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FakeShop } from '../fake-shop';
import {
  orderCount,
  resultChunks,
  resultLines,
  rootCount,
  type BulkDataOptions,
  type FakeBulkKind,
  type FakeBulkOperation,
} from './bulk-data';
import type { GraphqlHandler, GraphqlRequest } from './graphql';

export { graphqlCustomer, graphqlOrder, type BulkDataOptions, type FakeBulkKind, type FakeBulkOperation } from './bulk-data';

export interface DownloadRecord {
  operationId: string;
  range: string | null;
  status: number;
  bytesSent: number;
}

export interface FakeBulk {
  /** Origin of the result storage server. */
  url: string;
  operations(): FakeBulkOperation[];
  downloads(): DownloadRecord[];
  /** Changes the data and timing for operations started from now on. */
  configure(patch: Partial<BulkDataOptions>): void;
  /** The next operation ends FAILED with this error code. */
  failNextOperation(errorCode?: string): void;
  /** The next download is cut off (connection destroyed) after this many bytes. */
  dropNextDownload(afterBytes: number): void;
  /** The result URLs of the operations started so far answer 403, as after seven days. */
  expireResults(): void;
  /** The storage server ignores Range headers (answers 200 with the whole file). */
  ignoreRange(on: boolean): void;
  /** Exact size of an operation's result in bytes. */
  resultSize(operationId: string): number;
  /** A completed operation without going through GraphQL (benchmarks): its id and result URL. */
  createCompleted(
    shopDomain: string,
    kind: FakeBulkKind,
    opts?: { since?: Date | null; groupObjects?: boolean },
  ): { id: string; url: string };
  close(): Promise<void>;
}

const gidNumber = (gid: string) => gid.slice(gid.lastIndexOf('/') + 1);

export async function enableBulkOperations(fake: FakeShop, options: BulkDataOptions = {}): Promise<FakeBulk> {
  let opts: BulkDataOptions = { ...options };
  const ops = new Map<string, FakeBulkOperation>();
  const downloads: DownloadRecord[] = [];
  const sizes = new Map<string, number>();
  const timers = new Set<NodeJS.Timeout>();
  let nextId = 4_100_000;
  let failNext: string | null = null;
  let dropNext: number | null = null;
  const expired = new Set<string>();
  let noRange = false;

  function newOperation(
    shopDomain: string,
    kind: FakeBulkKind,
    since: Date | null,
    groupObjects: boolean,
    completeAfterMs = opts.completeAfterMs ?? 300,
  ): FakeBulkOperation {
    const now = Date.now();
    const op: FakeBulkOperation = {
      id: `gid://shopify/BulkOperation/${nextId++}`,
      shop: shopDomain,
      kind,
      since,
      groupObjects,
      createdAt: new Date(now),
      completeAt: now + completeAfterMs,
      failWith: failNext,
      canceled: false,
      data: {
        customers: opts.customers ?? 1_000,
        orders: opts.orders ?? 1_000,
        orderSpanDays: opts.orderSpanDays ?? 300,
        anchor: opts.anchor ?? new Date(now),
        phoneOnlyEvery: opts.phoneOnlyEvery ?? 0,
      },
    };
    failNext = null;
    ops.set(op.id, op);
    return op;
  }

  const statusOf = (op: FakeBulkOperation): string => {
    if (op.canceled) return 'CANCELED';
    if (Date.now() < op.completeAt) return 'RUNNING';
    return op.failWith ? 'FAILED' : 'COMPLETED';
  };
  const resultUrl = (op: FakeBulkOperation) => `${storageUrl}/results/${gidNumber(op.id)}.jsonl?shop=${encodeURIComponent(op.shop)}`;

  function view(op: FakeBulkOperation): Record<string, unknown> {
    const status = statusOf(op);
    const done = status === 'COMPLETED';
    const roots = rootCount(op);
    return {
      id: op.id,
      status,
      errorCode: status === 'FAILED' ? op.failWith : null,
      objectCount: String(done ? (op.kind === 'orders' ? roots + Math.ceil(roots * 1.5) : roots) : 0),
      rootObjectCount: String(done ? roots : 0),
      fileSize: null,
      // Shopify gives no file when nothing matched
      url: done && roots > 0 ? resultUrl(op) : null,
      partialDataUrl: null,
      type: 'QUERY',
      query: '',
      createdAt: op.createdAt.toISOString(),
      completedAt: done ? new Date(op.completeAt).toISOString() : null,
    };
  }

  const idOf = (req: GraphqlRequest): string | null => {
    const v = req.variables.id;
    if (typeof v === 'string') return v;
    return /id:\s*"([^"]+)"/.exec(req.query)?.[1] ?? null;
  };

  const sinceOf = (text: string): Date | null => {
    const m = /created_at:\s*>=\s*['"]?([0-9][0-9T:.+\-Z]*)/.exec(text);
    if (!m) return null;
    const d = new Date(m[1]!);
    return Number.isNaN(d.getTime()) ? null : d;
  };

  const handler: GraphqlHandler = (req) => {
    const { query, variables, shop } = req;
    if (/\bbulkOperationRunQuery\b/.test(query)) {
      const inner = typeof variables.query === 'string' ? variables.query : (/query:\s*"""([\s\S]*?)"""/.exec(query)?.[1] ?? '');
      const kind: FakeBulkKind | null = /\bcustomers\b/.test(inner) ? 'customers' : /\borders\b/.test(inner) ? 'orders' : null;
      if (!kind)
        return {
          data: {
            bulkOperationRunQuery: {
              bulkOperation: null,
              userErrors: [{ field: ['query'], message: 'The fake shop exports customers and orders only', code: 'INVALID' }],
            },
          },
        };
      const running = [...ops.values()].find((o) => o.shop === shop.domain && statusOf(o) === 'RUNNING');
      if (running) {
        return {
          data: {
            bulkOperationRunQuery: {
              bulkOperation: null,
              userErrors: [
                {
                  field: null,
                  message: `A bulk query operation for this app and shop is already in progress: ${running.id}.`,
                  code: 'OPERATION_IN_PROGRESS',
                },
              ],
            },
          },
        };
      }
      const op = newOperation(
        shop.domain,
        kind,
        kind === 'orders' ? sinceOf(inner) : null,
        variables.groupObjects === true || /groupObjects:\s*true/.test(query),
      );
      const now = op.createdAt.getTime();
      if (opts.webhookUrl) {
        const url = opts.webhookUrl;
        const t = setTimeout(
          () => {
            timers.delete(t);
            if (op.canceled) return;
            const v = view(op);
            fake
              .sendWebhook(url, {
                topic: 'bulk_operations/finish',
                shopDomain: op.shop,
                payload: {
                  admin_graphql_api_id: op.id,
                  completed_at: v.completedAt,
                  created_at: v.createdAt,
                  error_code: op.failWith?.toLowerCase() ?? null,
                  status: String(v.status).toLowerCase(),
                  type: 'query',
                },
              })
              .catch(() => undefined);
          },
          op.completeAt - now + 5,
        );
        t.unref();
        timers.add(t);
      }
      return { data: { bulkOperationRunQuery: { bulkOperation: { id: op.id, status: 'CREATED' }, userErrors: [] } } };
    }
    if (/\bbulkOperationCancel\b/.test(query)) {
      const op = ops.get(idOf(req) ?? '');
      if (!op || op.shop !== shop.domain)
        return {
          data: { bulkOperationCancel: { bulkOperation: null, userErrors: [{ field: ['id'], message: 'Bulk operation does not exist' }] } },
        };
      if (statusOf(op) === 'RUNNING') op.canceled = true;
      return { data: { bulkOperationCancel: { bulkOperation: { id: op.id, status: statusOf(op) }, userErrors: [] } } };
    }
    if (/\bcurrentBulkOperation\b/.test(query)) {
      const latest = [...ops.values()].filter((o) => o.shop === shop.domain).pop();
      return { data: { currentBulkOperation: latest ? view(latest) : null } };
    }
    if (/\b(node|bulkOperation)\s*\(/.test(query)) {
      const id = idOf(req) ?? '';
      if (!id.startsWith('gid://shopify/BulkOperation/')) return undefined;
      const op = ops.get(id);
      const field = /\bnode\s*\(/.test(query) ? 'node' : 'bulkOperation';
      return { data: { [field]: op && op.shop === shop.domain ? view(op) : null } };
    }
    if (/\bcustomersCount\b/.test(query)) {
      return { data: { customersCount: { count: opts.customers ?? 1_000, precision: 'EXACT' } } };
    }
    if (/\bordersCount\b/.test(query)) {
      const probe: FakeBulkOperation = {
        id: 'probe',
        shop: shop.domain,
        kind: 'orders',
        since: sinceOf(String(variables.query ?? query)),
        groupObjects: true,
        createdAt: new Date(),
        completeAt: 0,
        failWith: null,
        canceled: false,
        data: {
          customers: 0,
          orders: opts.orders ?? 1_000,
          orderSpanDays: opts.orderSpanDays ?? 300,
          anchor: opts.anchor ?? new Date(),
          phoneOnlyEvery: 0,
        },
      };
      return { data: { ordersCount: { count: orderCount(probe), precision: 'EXACT' } } };
    }
    return undefined;
  };
  fake.addGraphqlHandler(handler);

  function sizeOf(op: FakeBulkOperation): number {
    let size = sizes.get(op.id);
    if (size === undefined) {
      size = 0;
      for (const line of resultLines(op)) size += Buffer.byteLength(line, 'utf8');
      sizes.set(op.id, size);
    }
    return size;
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://storage.local');
    const m = /^\/results\/(\d+)\.jsonl$/.exec(url.pathname);
    const op = m ? ops.get(`gid://shopify/BulkOperation/${m[1]}`) : undefined;
    const range = typeof req.headers.range === 'string' ? req.headers.range : null;
    const record: DownloadRecord = { operationId: op?.id ?? '', range, status: 0, bytesSent: 0 };
    downloads.push(record);
    const end = (status: number, body: string) => {
      record.status = status;
      res.writeHead(status, { 'content-type': 'application/xml' }).end(body);
    };
    if (req.method !== 'GET' || !op || statusOf(op) !== 'COMPLETED') return end(404, '<Error><Code>NoSuchKey</Code></Error>');
    if (expired.has(op.id)) return end(403, '<Error><Code>ExpiredToken</Code><Message>The provided token has expired.</Message></Error>');
    const size = sizeOf(op);
    let from = 0;
    const r = range && !noRange ? /^bytes=(\d+)-$/.exec(range) : null;
    if (r) {
      from = Number(r[1]);
      if (from >= size) {
        record.status = 416;
        res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
        return;
      }
      record.status = 206;
      res.writeHead(206, {
        'content-type': 'application/jsonl',
        'content-length': size - from,
        'content-range': `bytes ${from}-${size - 1}/${size}`,
        'accept-ranges': 'bytes',
      });
    } else {
      record.status = 200;
      res.writeHead(200, { 'content-type': 'application/jsonl', 'content-length': size, 'accept-ranges': 'bytes' });
    }
    const drop = dropNext;
    dropNext = null;
    const counted = Readable.from(
      (function* () {
        for (const chunk of resultChunks(op, from)) {
          if (drop !== null && record.bytesSent + chunk.length > drop) {
            const part = chunk.subarray(0, Math.max(0, drop - record.bytesSent));
            record.bytesSent += part.length;
            if (part.length) yield part;
            return;
          }
          record.bytesSent += chunk.length;
          yield chunk;
        }
      })(),
    );
    try {
      await pipeline(counted, res, { end: drop === null });
      if (drop !== null) {
        // let the bytes reach the client, then break the connection mid-file
        await new Promise((r2) => setTimeout(r2, 20));
        res.socket?.destroy();
      }
    } catch {
      /* the client went away */
    }
  }

  const server: Server = createServer((req, res) => {
    serve(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const storageUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: storageUrl,
    operations: () => [...ops.values()],
    downloads: () => [...downloads],
    configure(patch) {
      opts = { ...opts, ...patch };
    },
    failNextOperation(errorCode = 'INTERNAL_SERVER_ERROR') {
      failNext = errorCode;
    },
    dropNextDownload(afterBytes) {
      dropNext = afterBytes;
    },
    expireResults() {
      for (const id of ops.keys()) expired.add(id);
    },
    ignoreRange(on) {
      noRange = on;
    },
    createCompleted(shopDomain, kind, o = {}) {
      const op = newOperation(shopDomain, kind, o.since ?? null, o.groupObjects ?? kind === 'orders', 0);
      return { id: op.id, url: resultUrl(op) };
    },
    resultSize(operationId) {
      const op = ops.get(operationId);
      if (!op) throw new Error(`no operation ${operationId}`);
      return sizeOf(op);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
