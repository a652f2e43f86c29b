// Configuration for the Prisma CLI only (generate, migrate). The application builds its own
// client in src/db/client.ts. See ../shared/notes/prisma-offline.md for why this file exists:
// the CLI uses the WebAssembly schema engine through driver adapters, so nothing is downloaded.
import path from 'node:path';
import { defineConfig } from 'prisma/config';
import { cliAdapterFactory, providerOf } from './scripts/cli-adapters';

process.env.DATABASE_URL ||= 'file:./data/connector.db';
const provider = providerOf(process.env.DATABASE_URL);
const folder = path.join('prisma', provider === 'postgres' ? 'postgres' : 'sqlite');

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: folder,
  migrations: { path: path.join(folder, 'migrations') },
  adapter: async () => cliAdapterFactory(process.env.DATABASE_URL as string),
});
