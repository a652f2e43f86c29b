// Memory while reading a bulk operation's JSONL result: the real download (undici, with the
// fake shop's storage server streaming a generated file), line splitter, grouper and mapper.
// RSS and heap are sampled while reading; flat means the peak does not grow with the file.
// Run: node --expose-gc --import tsx bench/backfill-memory.ts [--json] [sizes in MB, default 5 50 200]
import { setImmediate as turn } from 'node:timers/promises';
import { jsonlLines, RootGrouper } from '../src/backfill/jsonl';
import { createShopifyBulkSource } from '../src/backfill/shopify-bulk';
import { isLineItem, mapImportedOrder } from '../src/mapping/imports';
import { createLogger } from '../src/observability/logger';
import { startFakeShop } from '../sandbox/fake-shop';
import { enableBulkOperations } from '../sandbox/fake-shop/bulk';
import { DEFAULT_SETTINGS } from '../src/settings/settings';

export interface MemoryRow {
  fileMB: number;
  lines: number;
  orders: number;
  seconds: number;
  rssBeforeMB: number;
  rssPeakMB: number;
  rssAfterMB: number;
  heapBeforeMB: number;
  heapPeakMB: number;
  heapAfterMB: number;
}

const MB = 1024 * 1024;
const gc = (globalThis as { gc?: () => void }).gc;
const BYTES_PER_ORDER = 1_610; // measured on the generated orders (order line plus line items)

/** Streams a generated orders result of about `targetMB` through the import's reading path. */
export async function measureParse(targetMB: number): Promise<MemoryRow> {
  const fake = await startFakeShop({ apiKey: 'bench', apiSecret: 'bench-secret' });
  const bulk = await enableBulkOperations(fake, { customers: 0, orders: Math.ceil((targetMB * MB) / BYTES_PER_ORDER), orderSpanDays: 300 });
  try {
    const { id, url } = bulk.createCompleted('bench.myshopify.com', 'orders');
    const size = bulk.resultSize(id);
    const source = createShopifyBulkSource({
      shopify: {} as never,
      tokens: {} as never,
      logger: createLogger('silent'),
      production: false,
    });
    const ctx = { shopDomain: 'bench.myshopify.com', settings: DEFAULT_SETTINGS, now: new Date() };
    gc?.();
    const before = process.memoryUsage();
    let rssPeak = before.rss;
    let heapPeak = before.heapUsed;
    const sample = () => {
      const m = process.memoryUsage();
      rssPeak = Math.max(rssPeak, m.rss);
      heapPeak = Math.max(heapPeak, m.heapUsed);
    };
    const sampler = setInterval(sample, 10);
    const started = performance.now();
    const opened = await source.open(url, 0, new AbortController().signal);
    const grouper = new RootGrouper();
    let lines = 0;
    let orders = 0;
    const map = (rec: ReturnType<RootGrouper['finish']>) => {
      if (!rec) return;
      if ('message' in mapImportedOrder(rec.root, rec.children.filter(isLineItem), ctx)) orders++;
    };
    for await (const line of jsonlLines(opened.chunks)) {
      lines++;
      map(grouper.push(line));
      if (lines % 100 === 0) await turn(); // as the runner does
    }
    map(grouper.finish());
    const seconds = (performance.now() - started) / 1000;
    sample();
    clearInterval(sampler);
    gc?.();
    const after = process.memoryUsage();
    return {
      fileMB: size / MB,
      lines,
      orders,
      seconds,
      rssBeforeMB: before.rss / MB,
      rssPeakMB: rssPeak / MB,
      rssAfterMB: after.rss / MB,
      heapBeforeMB: before.heapUsed / MB,
      heapPeakMB: heapPeak / MB,
      heapAfterMB: after.heapUsed / MB,
    };
  } finally {
    await bulk.close();
    await fake.close();
  }
}

export function formatTable(rows: MemoryRow[]): string {
  const head = ['file MB', 'lines', 'orders', 'seconds', 'RSS before', 'RSS peak', 'RSS after', 'heap before', 'heap peak', 'heap after'];
  const body = rows.map((r) => [
    r.fileMB.toFixed(1),
    String(r.lines),
    String(r.orders),
    r.seconds.toFixed(1),
    r.rssBeforeMB.toFixed(0),
    r.rssPeakMB.toFixed(0),
    r.rssAfterMB.toFixed(0),
    r.heapBeforeMB.toFixed(0),
    r.heapPeakMB.toFixed(0),
    r.heapAfterMB.toFixed(0),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padStart(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

async function main(): Promise<void> {
  const sizes = process.argv
    .slice(2)
    .map(Number)
    .filter((n) => n > 0);
  const rows: MemoryRow[] = [];
  for (const mb of sizes.length ? sizes : [5, 50, 200]) rows.push(await measureParse(mb));
  // --json: the rows alone, for a test that measures in a fresh process of its own
  if (process.argv.includes('--json')) return void process.stdout.write(`${JSON.stringify(rows)}\n`);
  process.stdout.write(
    `Reading a bulk JSONL result (MB of memory)${gc ? '' : ' (run with --expose-gc for steadier numbers)'}\n${formatTable(rows)}\n`,
  );
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  });
}
