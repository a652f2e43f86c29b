// Walls in the code, checked from the import statements (TypeScript's own pre-processor, no
// type-checking, so this takes milliseconds). The folders are layers along the data's way
// (docs/architecture.md): an import may only go down, never back up nor sideways into another
// folder of the same layer; there is no import cycle anywhere in src; only the composition root
// and the entry points read the configuration; the mappers are pure; a background loop writes
// no table itself, and the delivery loop (src/outbox/delivery) reaches the database only through
// its shop context; and SQL that differs by database lives under src/db alone.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SRC = path.resolve(__dirname, '..', '..', 'src');

/** The src files a file imports (relative imports, type-only ones included), as paths under src. */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(fs.readFileSync(path.join(SRC, file), 'utf8'), true, true);
  const out: string[] = [];
  for (const { fileName } of info.importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const base = path.resolve(path.dirname(path.join(SRC, file)), fileName);
    const hit = [`${base}.ts`, path.join(base, 'index.ts')].find((c) => fs.existsSync(c));
    if (hit) out.push(path.relative(SRC, hit).split(path.sep).join('/'));
  }
  return out;
}

/** Every .ts file under src, as paths under src. */
const allTsFiles = (): string[] =>
  (fs.readdirSync(SRC, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => f.split(path.sep).join('/'));

/** Every cycle in the graph restricted to `files`, as "a -> b -> a". */
function cycles(files: string[], edges: (f: string) => string[] = importsOf): string[] {
  const inside = new Set(files);
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const found: string[] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    stack.push(f);
    for (const g of edges(f).filter((x) => inside.has(x))) {
      if (state.get(g) === 'open') found.push([...stack.slice(stack.indexOf(g)), g].join(' -> '));
      else if (!state.has(g)) visit(g);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of files) if (!state.has(f)) visit(f);
  return found;
}

/**
 * The layers, top first. A file may import files of its own folder and of any folder on a lower
 * layer; two folders on one layer know nothing of each other.
 */
const LAYERS: string[][] = [
  ['migrate.ts'],
  ['main.ts'],
  ['config.ts'],
  ['app'],
  ['http'],
  ['admin'],
  ['backfill', 'processing'],
  ['intake', 'outbox', 'notify-me'],
  ['integrations/shopify', 'integrations/service'],
  ['mapping', 'db'],
  ['settings', 'crypto', 'observability', 'lib'],
];

/** The folder a file belongs to, as LAYERS names it. */
function folderOf(file: string): string {
  const parts = file.split('/');
  if (parts.length === 1) return parts[0]!;
  return parts[0] === 'integrations' ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

const layerOf = (folder: string): number => LAYERS.findIndex((l) => l.includes(folder));

/** Imports that run up the layers or sideways into another folder of the same layer. */
function wrongWays(files: string[], edges: (f: string) => string[] = importsOf): string[] {
  const out: string[] = [];
  for (const f of files) {
    const from = folderOf(f);
    for (const g of edges(f)) {
      const to = folderOf(g);
      if (to === from) continue;
      // the configuration is read by the entry points and the composition root alone
      const allowed = to === 'config.ts' ? ['main.ts', 'migrate.ts', 'app'].includes(from) : layerOf(to) > layerOf(from);
      if (!allowed) out.push(`${f} imports ${g}`);
    }
  }
  return out;
}

/**
 * The files of the delivery loop that may import src/db: the shop context, whose read rides on
 * the pass's lease. The rest of the loop writes and reads through the outbox's stores.
 */
const DELIVERY_DB_READERS = ['outbox/delivery/shop-context.ts'];

/** Imports of src/db by files of the delivery loop other than DELIVERY_DB_READERS. */
function deliveryReachingDb(files: string[], edges: (f: string) => string[] = importsOf): string[] {
  return files
    .filter((f) => f.startsWith('outbox/delivery/') && !DELIVERY_DB_READERS.includes(f))
    .flatMap((f) =>
      edges(f)
        .filter((g) => g.startsWith('db/'))
        .map((g) => `${f} imports ${g}`),
    );
}

/**
 * Whether source text reaches the database itself: raw SQL, a transaction, or a Prisma model call
 * on a `db` (the stores and use cases a loop is given do this; the loop does not).
 */
const DATABASE_CALL =
  /\$executeRaw|\$queryRaw|\$transaction|Prisma\.sql|driverTransaction\(|\bdb\.[a-z]\w*\.(find|create|update|upsert|delete|count|groupBy|aggregate)\w*\(/;

describe('architecture', () => {
  it('the checker reads imports, type-only ones included, and finds cycles and wrong-way imports', () => {
    expect(importsOf('backfill/runner.ts')).toEqual(expect.arrayContaining(['backfill/job.ts', 'backfill/deps.ts']));
    expect(importsOf('backfill/job.ts')).toContain('backfill/deps.ts');
    const graph: Record<string, string[]> = { a: ['b'], b: ['c', 'd'], c: ['a'], d: [] };
    expect(cycles(Object.keys(graph), (f) => graph[f]!)).toEqual(['a -> b -> c -> a']);
    expect(cycles(['a', 'b', 'd'], (f) => graph[f]!)).toEqual([]);
    const imports: Record<string, string[]> = {
      'outbox/worker.ts': ['db/raw.ts', 'admin/connection.ts', 'intake/intake.ts', 'outbox/pacer.ts'],
      'integrations/shopify/api.ts': ['config.ts'],
      'app/server.ts': ['config.ts', 'http/app.ts'],
    };
    expect(wrongWays(Object.keys(imports), (f) => imports[f]!)).toEqual([
      'outbox/worker.ts imports admin/connection.ts',
      'outbox/worker.ts imports intake/intake.ts',
      'integrations/shopify/api.ts imports config.ts',
    ]);
    const delivery: Record<string, string[]> = {
      'outbox/delivery/worker.ts': ['db/client.ts', 'outbox/delivery/lane.ts'],
      'outbox/delivery/shop-context.ts': ['db/raw.ts'],
      'outbox/repository.ts': ['db/raw.ts'],
    };
    expect(deliveryReachingDb(Object.keys(delivery), (f) => delivery[f]!)).toEqual(['outbox/delivery/worker.ts imports db/client.ts']);
  });

  it('every folder of src has a layer', () => {
    const unplaced = [...new Set(allTsFiles().map(folderOf))].filter((f) => layerOf(f) < 0);
    expect(unplaced).toEqual([]);
  });

  it('no import runs back up the layers or sideways between folders of a layer', () => {
    expect(wrongWays(allTsFiles())).toEqual([]);
  });

  it('no module of src is part of an import cycle', () => {
    const files = allTsFiles();
    expect(files).toEqual(
      expect.arrayContaining(['app/server.ts', 'backfill/job.ts', 'outbox/delivery/worker.ts', 'processing/storefront/stage.ts']),
    );
    expect(cycles(files)).toEqual([]);
  });

  it('the delivery loop reaches the database only through its shop context: it writes no table itself', () => {
    const files = allTsFiles();
    expect(files).toEqual(expect.arrayContaining(['outbox/delivery/worker.ts', ...DELIVERY_DB_READERS]));
    expect(deliveryReachingDb(files)).toEqual([]);
  });

  it('a background loop writes no table: it reaches the database only through the stores and use cases it is given', () => {
    expect(DATABASE_CALL.test('await this.deps.db.receiptLease.updateMany({ where })')).toBe(true);
    expect(DATABASE_CALL.test('await tx.$executeRaw(Prisma.sql`UPDATE "ReceiptLease"`)')).toBe(true);
    expect(DATABASE_CALL.test('await this.partitions.giveUp(turn.partitions); this.jobs.delete(id);')).toBe(false);
    const loops = allTsFiles().filter((f) => importsOf(f).includes('lib/background-loop.ts'));
    expect(loops).toEqual(
      expect.arrayContaining([
        'processing/processor.ts',
        'processing/product-alerts/runner.ts',
        'backfill/runner.ts',
        'outbox/delivery/worker.ts',
      ]),
    );
    const offenders = loops.filter((f) => DATABASE_CALL.test(fs.readFileSync(path.join(SRC, f), 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('the Connection row has one writer: outbox/connection-store.ts', () => {
    const write = /\bconnection\.(create|update|upsert|delete)\w*\(|(INSERT INTO|UPDATE|DELETE FROM) "Connection"/;
    expect(write.test('await tx.connection.updateMany({ where })')).toBe(true);
    expect(write.test('UPDATE "Connection" AS "c" SET')).toBe(true);
    expect(write.test('await db.connection.findUnique({ where })')).toBe(false);
    const writers = allTsFiles().filter((f) => write.test(fs.readFileSync(path.join(SRC, f), 'utf8')));
    expect(writers).toEqual(['outbox/connection-store.ts']);
  });

  it('the mappers are pure: they import only each other and the settings', () => {
    const offenders = allTsFiles()
      .filter((f) => f.startsWith('mapping/'))
      .flatMap((f) =>
        importsOf(f)
          .filter((i) => !i.startsWith('mapping/') && i !== 'settings/settings.ts')
          .map((i) => `${f} imports ${i}`),
      );
    expect(offenders).toEqual([]);
  });

  it('SQL that differs by database is written under src/db alone: no branch on the provider elsewhere', () => {
    const branch = /\b(provider|dialect\.name)\s*[!=]==|[!=]==\s*'(postgres|sqlite)'/;
    const offenders = allTsFiles()
      .filter((f) => !f.startsWith('db/'))
      .flatMap((f) =>
        fs
          .readFileSync(path.join(SRC, f), 'utf8')
          .split('\n')
          .map((line, i) => ({ f, line, i })),
      )
      .filter(({ line }) => branch.test(line))
      .map(({ f, i }) => `${f}:${i + 1}`);
    expect(offenders).toEqual([]);
  });
});
