#!/usr/bin/env node
// npm run db:migrate: the compiled migrator when the app is built, else the source one (tsx).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const built = path.join(root, 'dist', 'src', 'migrate.js');
const args = fs.existsSync(built) ? [built] : ['--import', 'tsx', path.join(root, 'src', 'migrate.ts')];
const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
