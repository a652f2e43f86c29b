// The generated Prisma client serves one provider, and node_modules is shared (other work may be
// running on it). A benchmark that needs the other provider gets a private client, generated
// once into node_modules/.cache, and this process (or a child, through BENCH_PRISMA_CLIENT_DIR)
// resolves `.prisma/client` there. The shared client is never regenerated.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import Module from 'node:module';
import path from 'node:path';

export type Provider = 'sqlite' | 'postgres';
export const root = path.resolve(__dirname, '..');

// Deliberately not src/db/client's reader: importing that module loads @prisma/client before
// the resolution below is redirected.
export function generatedProvider(): Provider | null {
  try {
    const schema = fs.readFileSync(path.join(root, 'node_modules', '.prisma', 'client', 'schema.prisma'), 'utf8');
    const m = schema.match(/provider\s*=\s*"(sqlite|postgresql)"/);
    return m ? (m[1] === 'postgresql' ? 'postgres' : 'sqlite') : null;
  } catch {
    return null;
  }
}

/**
 * The directory of a client generated for `provider`: none (undefined) when the shared one
 * already serves it, otherwise a private one, generated if missing or stale.
 */
export function clientDirFor(provider: Provider): string | undefined {
  if (generatedProvider() === provider) return undefined;
  const cache = path.join(root, 'node_modules', '.cache', 'connector-bench', `${provider}-client`);
  const folder = path.join(root, 'prisma', provider);
  const schema = fs.readFileSync(path.join(folder, 'schema.prisma'), 'utf8');
  const models = fs.readFileSync(path.join(folder, 'models.prisma'), 'utf8');
  const version = JSON.parse(fs.readFileSync(path.join(root, 'node_modules', 'prisma', 'package.json'), 'utf8')).version as string;
  const stamp = createHash('sha256').update(schema).update(models).update(version).digest('hex');
  const out = path.join(cache, 'client');
  const stampFile = path.join(cache, 'stamp');
  if (fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === stamp && fs.existsSync(path.join(out, 'default.js'))) return out;

  fs.rmSync(cache, { recursive: true, force: true });
  fs.mkdirSync(path.join(cache, 'schema'), { recursive: true });
  const withOutput = schema.replace(/generator\s+client\s*\{/, (m) => `${m}\n  output = ${JSON.stringify(out)}`);
  fs.writeFileSync(path.join(cache, 'schema', 'schema.prisma'), withOutput);
  fs.writeFileSync(path.join(cache, 'schema', 'models.prisma'), models);
  const url = provider === 'postgres' ? 'postgresql://bench@127.0.0.1:5432/bench' : 'file:./data/bench.db';
  const res = spawnSync(process.execPath, [path.join(root, 'node_modules', 'prisma', 'build', 'index.js'), 'generate', '--schema', path.join(cache, 'schema')], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: url, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' },
    encoding: 'utf8',
  });
  if (res.status !== 0) throw new Error(`could not generate a ${provider} Prisma client: ${res.stdout}${res.stderr}`);
  fs.writeFileSync(stampFile, stamp);
  return out;
}

/** Makes this process load `.prisma/client` from `dir`. Call before anything imports @prisma/client. */
export function usePrismaClientDir(dir: string | undefined): void {
  if (!dir) return;
  const mod = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
  const resolve = mod._resolveFilename;
  mod._resolveFilename = function (request: string, ...rest: unknown[]) {
    if (request === '.prisma/client' || request.startsWith('.prisma/client/')) request = path.join(dir, request.slice('.prisma/client'.length));
    return resolve.call(this, request, ...rest);
  };
}

/** For a benchmark process about to use Prisma on `provider`. */
export function usePrismaFor(provider: Provider): string | undefined {
  const dir = clientDirFor(provider);
  usePrismaClientDir(dir);
  return dir;
}
