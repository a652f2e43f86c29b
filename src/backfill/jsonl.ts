// Reading a bulk operation's JSONL result with constant memory: a byte-counting line splitter
// over the response stream (only the unfinished tail of a chunk is carried over), and a grouper
// that turns lines into root objects with their children. Byte offsets make resuming with an
// HTTP Range request exact.
export interface JsonlLine {
  /** 1-based line number in the whole file. */
  number: number;
  /** Byte offsets of the line in the whole file: [start, end), newline excluded. */
  start: number;
  end: number;
  text: string;
}

export class LineTooLongError extends Error {
  constructor(
    readonly line: number,
    readonly limit: number,
  ) {
    super(`line ${line} of the result file is longer than ${limit} bytes`);
    this.name = 'LineTooLongError';
  }
}

const NL = 0x0a;
const CR = 0x0d;

/**
 * Splits a byte stream into lines. `firstByte`/`firstLine` say where the stream starts in the
 * file (after a Range request); `skipLines` lines are passed over without decoding (a resume
 * against a server that ignored the Range header). Empty lines are skipped but counted.
 */
export async function* jsonlLines(
  chunks: AsyncIterable<Uint8Array>,
  opts: { firstByte?: number; firstLine?: number; skipLines?: number; maxLineBytes?: number } = {},
): AsyncGenerator<JsonlLine> {
  const max = opts.maxLineBytes ?? 16 * 1024 * 1024;
  const skip = opts.skipLines ?? 0;
  let offset = opts.firstByte ?? 0; // file offset of the first byte of `tail`
  let number = opts.firstLine ?? 0;
  let tail: Buffer = Buffer.alloc(0);
  const emit = (bytes: Buffer, start: number): JsonlLine | null => {
    number++;
    if (number <= skip) return null;
    let len = bytes.length;
    if (len > 0 && bytes[len - 1] === CR) len--;
    if (len === 0) return null;
    return { number, start, end: start + len, text: bytes.toString('utf8', 0, len) };
  };
  for await (const chunk of chunks) {
    const buf: Buffer = tail.length ? Buffer.concat([tail, chunk]) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let from = 0;
    for (let nl = buf.indexOf(NL, from); nl !== -1; nl = buf.indexOf(NL, from)) {
      const line = emit(buf.subarray(from, nl), offset + from);
      if (line) yield line;
      from = nl + 1;
    }
    offset += from;
    // copy the tail so the chunk it came from can be collected
    tail = from < buf.length ? Buffer.from(buf.subarray(from)) : Buffer.alloc(0);
    if (tail.length > max) throw new LineTooLongError(number + 1, max);
  }
  if (tail.length) {
    const line = emit(tail, offset);
    if (line) yield line;
  }
}

export interface RootRecord {
  root: Record<string, unknown>;
  children: Record<string, unknown>[];
  /** Where the root's first line starts: resuming here re-reads exactly this record. */
  startLine: number;
  startByte: number;
}

export class InvalidLineError extends Error {
  constructor(readonly line: number) {
    super(`line ${line} of the result file is not a JSON object`);
    this.name = 'InvalidLineError';
  }
}

/**
 * Groups lines into root objects. A line with __parentId is a child of the current root; the
 * next line without one closes the current root. Children of another root (possible only
 * without groupObjects) are counted as orphans and dropped: they cannot be attached with
 * constant memory.
 */
export class RootGrouper {
  private current: RootRecord | null = null;
  orphans = 0;

  /** Adds a line; returns the root it completed, if any. */
  push(line: JsonlLine): RootRecord | null {
    let value: unknown;
    try {
      value = JSON.parse(line.text);
    } catch {
      throw new InvalidLineError(line.number);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidLineError(line.number);
    const o = value as Record<string, unknown>;
    const parent = o.__parentId;
    if (typeof parent === 'string') {
      if (this.current && this.current.root.id === parent) this.current.children.push(o);
      else this.orphans++;
      return null;
    }
    const done = this.current;
    this.current = { root: o, children: [], startLine: line.number - 1, startByte: line.start };
    return done;
  }

  /** The root still open: where a checkpoint must point so it is read again. */
  get pending(): RootRecord | null {
    return this.current;
  }

  /** End of file: the last root is complete. */
  finish(): RootRecord | null {
    const done = this.current;
    this.current = null;
    return done;
  }
}
