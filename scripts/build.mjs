#!/usr/bin/env node
// npm run build: one artifact for both databases. Generates the Prisma client of each provider,
// compiles the TypeScript, and ships both providers' migrations in dist/prisma, where the app
// applies them at start (or `npm run db:migrate`), offline, and the admin page's files in
// dist/src/admin-ui, so the built app needs nothing from src/.
//   --out-dir DIR    build into DIR instead of dist/ (same layout: DIR/src/main.js, DIR/prisma)
//   --reuse-clients  generate only the clients that are missing or stale (ensure-generated)
//                    instead of both: for runs that must not rewrite node_modules/.prisma while
//                    other processes load it (test/integration/build.test.ts)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: { 'out-dir': { type: 'string' }, 'reuse-clients': { type: 'boolean', default: false } },
});
const outDir = path.resolve(root, opts['out-dir'] ?? 'dist');
const step = (cmd, args) => {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
};

step(process.execPath, [path.join(root, 'scripts', 'prisma.mjs'), opts['reuse-clients'] ? 'ensure-generated' : 'generate']);
step(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--outDir', outDir]);
for (const provider of ['sqlite', 'postgres']) {
  const to = path.join(outDir, 'prisma', provider, 'migrations');
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(path.join(root, 'prisma', provider, 'migrations'), to, { recursive: true });
}
const ui = path.join(outDir, 'src', 'admin-ui');
fs.rmSync(ui, { recursive: true, force: true });
fs.cpSync(path.join(root, 'src', 'admin-ui'), ui, { recursive: true });
const shown = path.relative(root, outDir).startsWith('..') ? outDir : path.relative(root, outDir);
console.log(`built ${shown}/ for SQLite and PostgreSQL (migrations in ${path.join(shown, 'prisma')})`);
