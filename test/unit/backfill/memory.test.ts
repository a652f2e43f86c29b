// The acceptance's "memory stays flat while parsing a 50 MB JSONL", through the real reading
// path (undici download from the fake storage server, splitter, grouper, mapper).
// bench/backfill-memory.ts prints the same measure for several sizes.
import { formatTable, measureParse } from '../../../bench/backfill-memory';

jest.setTimeout(60_000);

it('reads a 50 MB result with memory that does not grow with the file', async () => {
  const small = await measureParse(5);
  const large = await measureParse(50);
  process.stdout.write(`\n${formatTable([small, large])}\n`);
  expect(large.fileMB).toBeGreaterThanOrEqual(50);
  expect(large.orders).toBeGreaterThan(30_000);
  // a whole file in memory would be 50 MB of bytes plus far more as objects
  expect(large.rssPeakMB - large.rssBeforeMB).toBeLessThan(48);
  expect(large.heapPeakMB - large.heapBeforeMB).toBeLessThan(40);
  expect(large.heapPeakMB - small.heapPeakMB).toBeLessThan(24);
});
