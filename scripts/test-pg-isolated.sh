#!/usr/bin/env bash
# Runs the database tests on PostgreSQL in a throwaway copy of the project, so the shared
# node_modules keeps its SQLite client (the generated Prisma client serves one provider).
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
dst="${TMPDIR:-/tmp}/connector-pg-copy"
rm -rf "$dst" && mkdir -p "$dst"
tar -C "$src" --exclude=./data --exclude=./.git -cf - . | tar -C "$dst" -xf -
cd "$dst"
export DATABASE_URL="${PG_URL:-postgresql://postgres@127.0.0.1:5432/postgres}"
node scripts/prisma.mjs generate >/dev/null
npx jest --selectProjects db faults --runInBand --forceExit "$@"
