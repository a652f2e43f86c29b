// Shared by the service client and emulator tests: a log sink and tiny ad-hoc HTTP servers.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, type Logger } from '../../../src/observability/logger';

export interface CapturedLogs {
  logger: Logger;
  lines: string[];
  text(): string;
  levels(): number[];
}

export function captureLogs(level = 'trace'): CapturedLogs {
  const lines: string[] = [];
  const logger = createLogger(level, { write: (s: string) => lines.push(s) });
  return {
    logger,
    lines,
    text: () => lines.join(''),
    levels: () => lines.map((l) => (JSON.parse(l) as { level: number }).level),
  };
}

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface AdhocServer {
  url: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

export type AdhocHandler = (req: SeenRequest, res: ServerResponse) => void;

/** A server that records every request and lets the test answer it however it likes. */
export async function adhocServer(handler: AdhocHandler): Promise<AdhocServer> {
  const seen: SeenRequest[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      seen.push(r);
      handler(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
