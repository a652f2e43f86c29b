// Builds the pixel bundle with esbuild, as Shopify CLI does on deploy (same entry, IIFE, ES6
// target), so the size measured here is the size shipped. `npm run build:pixel` writes
// dist/pixel.js and prints its size; the sandbox storefront calls buildPixel() in memory.
//
//   npm run build:pixel                                  -> sends to http://localhost:3000/pixel/events
//   SHOPIFY_APP_URL=https://app.example.com npm run build:pixel
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/** src/index.ts beside this file (or beside the sources when run from a compiled dist/). */
export function pixelEntry(): string {
  const candidates = [path.join(__dirname, 'src', 'index.ts'), path.resolve(__dirname, '../../../extensions/email-pixel/src/index.ts')];
  const found = candidates.find((c) => fs.existsSync(c));
  if (!found) throw new Error(`pixel source not found (looked in ${candidates.join(', ')})`);
  return found;
}

export interface PixelBuildOptions {
  /** The app's public URL; the pixel posts to `${appUrl}/pixel/events`. Unset: the sandbox default. */
  appUrl?: string;
  minify?: boolean;
}

export interface PixelBundle {
  code: string;
  bytes: number;
  gzipBytes: number;
}

/** Throws on an app URL that is not an absolute http(s) URL, or plain http to a public host. */
export function checkAppUrl(appUrl: string): string {
  let url: URL;
  try {
    url = new URL(appUrl);
  } catch {
    throw new Error(`SHOPIFY_APP_URL is not a URL: ${appUrl}`);
  }
  const local = url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && local))
    throw new Error(`SHOPIFY_APP_URL must be https (http only for localhost): ${appUrl}`);
  return appUrl.replace(/\/+$/, '');
}

export async function buildPixel(opts: PixelBuildOptions = {}): Promise<PixelBundle> {
  const appUrl = opts.appUrl ? checkAppUrl(opts.appUrl) : '';
  const result = await build({
    entryPoints: [pixelEntry()],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es6',
    minify: opts.minify ?? true,
    legalComments: 'none',
    logLevel: 'silent',
    define: {
      'process.env.SHOPIFY_APP_URL': JSON.stringify(appUrl),
      'process.env.NODE_ENV': JSON.stringify(appUrl ? 'production' : 'development'),
    },
  });
  const code = result.outputFiles[0]!.text;
  return { code, bytes: Buffer.byteLength(code), gzipBytes: gzipSync(code, { level: 9 }).length };
}

async function main(): Promise<void> {
  const appUrl = process.env.SHOPIFY_APP_URL;
  if (!appUrl && process.env.NODE_ENV === 'production')
    throw new Error('SHOPIFY_APP_URL is required when NODE_ENV=production (the pixel would send to localhost)');
  const bundle = await buildPixel({ appUrl });
  const out = path.join(__dirname, 'dist', 'pixel.js');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, bundle.code);
  const endpoint = appUrl ? `${checkAppUrl(appUrl)}/pixel/events` : 'http://localhost:3000/pixel/events (sandbox default)';
  process.stdout.write(`${path.relative(process.cwd(), out)}: ${bundle.bytes} bytes, ${bundle.gzipBytes} gzipped; sends to ${endpoint}\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`build:pixel failed: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
