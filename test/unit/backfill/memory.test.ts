// The acceptance's "memory stays flat while parsing a 50 MB JSONL", through the real reading
// path (undici download from the fake storage server, splitter, grouper, mapper).
// bench/backfill-memory.ts prints the same measure for several sizes.
// It measures in a fresh Node process with --expose-gc: inside a Jest worker that has already
// run other files (a heap of 900 MB was seen), garbage left by them swung the peaks by tens of MB.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { formatTable, type MemoryRow } from '../../../bench/backfill-memory';

jest.setTimeout(90_000);

it('reads a 50 MB result with memory that does not grow with the file', async () => {
  const root = path.resolve(__dirname, '../../..');
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', 'bench/backfill-memory.ts', '--json', '5', '50'],
    { cwd: root, maxBuffer: 1 << 20 },
  );
  const [small, large] = JSON.parse(stdout.trim().split('\n').pop()!) as [MemoryRow, MemoryRow];
  process.stdout.write(`\n${formatTable([small, large])}\n`);
  expect(large.fileMB).toBeGreaterThanOrEqual(50);
  expect(large.orders).toBeGreaterThan(30_000);
  // a whole file in memory would be 50 MB of bytes plus far more as objects
  expect(large.rssPeakMB - large.rssBeforeMB).toBeLessThan(48);
  expect(large.heapPeakMB - large.heapBeforeMB).toBeLessThan(40);
  expect(large.heapPeakMB - small.heapPeakMB).toBeLessThan(24);
});
