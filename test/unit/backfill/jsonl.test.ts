import { InvalidLineError, jsonlLines, LineTooLongError, RootGrouper, type JsonlLine } from '../../../src/backfill/jsonl';

async function* chunked(text: string, size: number): AsyncGenerator<Uint8Array> {
  const buf = Buffer.from(text, 'utf8');
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

async function collect(it: AsyncIterable<JsonlLine>): Promise<JsonlLine[]> {
  const out: JsonlLine[] = [];
  for await (const l of it) out.push(l);
  return out;
}

const FILE = '{"id":"a"}\n{"id":"é€"}\r\n\n{"id":"c"}';

describe('the JSONL line splitter', () => {
  it.each([1, 2, 3, 7, 1000])('gives the same lines and byte offsets whatever the chunk size (%i)', async (size) => {
    const lines = await collect(jsonlLines(chunked(FILE, size)));
    expect(lines.map((l) => l.text)).toEqual(['{"id":"a"}', '{"id":"é€"}', '{"id":"c"}']);
    expect(lines.map((l) => l.number)).toEqual([1, 2, 4]);
    const bytes = Buffer.from(FILE, 'utf8');
    for (const l of lines) expect(bytes.subarray(l.start, l.end).toString('utf8')).toBe(l.text);
  });

  it('resumes at a byte offset with the right line numbers', async () => {
    const bytes = Buffer.from(FILE, 'utf8');
    const all = await collect(jsonlLines(chunked(FILE, 4)));
    const third = all[2]!;
    const resumed = await collect(
      jsonlLines(chunked(bytes.subarray(third.start).toString('utf8'), 3), { firstByte: third.start, firstLine: third.number - 1 }),
    );
    expect(resumed).toEqual([third]);
  });

  it('skips lines without decoding them when the server ignored the Range header', async () => {
    const lines = await collect(jsonlLines(chunked(FILE, 5), { skipLines: 3 }));
    expect(lines.map((l) => l.text)).toEqual(['{"id":"c"}']);
  });

  it('refuses a line longer than the limit instead of buffering it', async () => {
    await expect(collect(jsonlLines(chunked(`{"x":"${'y'.repeat(5000)}"}\n`, 256), { maxLineBytes: 1024 }))).rejects.toBeInstanceOf(
      LineTooLongError,
    );
  });
});

describe('the root grouper', () => {
  const line = (number: number, text: string, start = number * 100): JsonlLine => ({ number, start, end: start + text.length, text });

  it('closes a root when the next root starts, with its children', () => {
    const g = new RootGrouper();
    expect(g.push(line(1, '{"id":"o1"}'))).toBeNull();
    expect(g.push(line(2, '{"id":"li1","__parentId":"o1"}'))).toBeNull();
    expect(g.push(line(3, '{"id":"li2","__parentId":"o1"}'))).toBeNull();
    const done = g.push(line(4, '{"id":"o2"}'))!;
    expect(done.root).toEqual({ id: 'o1' });
    expect(done.children.map((c) => c.id)).toEqual(['li1', 'li2']);
    expect(done).toMatchObject({ startLine: 0, startByte: 100 });
    expect(g.pending).toMatchObject({ startLine: 3, startByte: 400 });
    expect(g.finish()!.root).toEqual({ id: 'o2' });
    expect(g.finish()).toBeNull();
  });

  it('counts children that are away from their parent (ungrouped files) and drops them', () => {
    const g = new RootGrouper();
    g.push(line(1, '{"id":"o1"}'));
    g.push(line(2, '{"id":"o2"}'));
    g.push(line(3, '{"id":"li1","__parentId":"o1"}'));
    expect(g.orphans).toBe(1);
    expect(g.finish()!.children).toEqual([]);
  });

  it('refuses a line that is not a JSON object', () => {
    const g = new RootGrouper();
    expect(() => g.push(line(1, '[1,2]'))).toThrow(InvalidLineError);
    expect(() => g.push(line(2, '{"id":'))).toThrow(InvalidLineError);
  });
});
