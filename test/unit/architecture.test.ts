// Walls in the code, checked from the import statements (TypeScript's own pre-processor, no
// type-checking, so this takes milliseconds): no import cycle anywhere in src, use cases know
// nothing of HTTP (they throw UseCaseError; src/http maps it to a status), and the mappers are
// pure (they import only each other and the settings' types).
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

const tsFilesIn = (dir: string) =>
  fs.readdirSync(path.join(SRC, dir)).filter((f) => f.endsWith('.ts')).map((f) => `${dir}/${f}`);

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

describe('architecture', () => {
  it('the checker reads imports, type-only ones included, and finds a cycle when there is one', () => {
    expect(importsOf('backfill/runner.ts')).toEqual(expect.arrayContaining(['backfill/job.ts', 'backfill/deps.ts']));
    expect(importsOf('backfill/job.ts')).toContain('backfill/deps.ts');
    const graph: Record<string, string[]> = { a: ['b'], b: ['c', 'd'], c: ['a'], d: [] };
    expect(cycles(Object.keys(graph), (f) => graph[f]!)).toEqual(['a -> b -> c -> a']);
    expect(cycles(['a', 'b', 'd'], (f) => graph[f]!)).toEqual([]);
  });

  it('no module of src is part of an import cycle', () => {
    const files = allTsFiles();
    expect(files).toEqual(expect.arrayContaining(['server.ts', 'backfill/job.ts', 'outbox/worker.ts', 'pixel/stage.ts']));
    expect(cycles(files)).toEqual([]);
  });

  it('the mappers are pure: they import only each other and the settings', () => {
    const offenders = tsFilesIn('mapping').flatMap((f) =>
      importsOf(f).filter((i) => !i.startsWith('mapping/') && i !== 'settings/settings.ts').map((i) => `${f} imports ${i}`));
    expect(offenders).toEqual([]);
  });

  it('no use case imports the HTTP layer', () => {
    const offenders = tsFilesIn('use-cases').flatMap((f) => importsOf(f).filter((i) => i.startsWith('http/')).map((i) => `${f} imports ${i}`));
    expect(offenders).toEqual([]);
  });
});
