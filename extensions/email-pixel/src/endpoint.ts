// Where the pixel sends its batches, fixed when the bundle is built. Both builders replace
// `process.env.SHOPIFY_APP_URL` (and NODE_ENV) with string constants: our build.ts, and Shopify
// CLI's own esbuild step on `shopify app deploy`, which defines every environment variable of
// the deploying shell as `process.env.<NAME>`. Nothing else of `process` exists in the sandbox.
declare const process: { env: { [name: string]: string | undefined } };

/** The sandbox default: the app of `npm run dev`. */
export const SANDBOX_ENDPOINT = 'http://localhost:3000/pixel/events';

function defined(read: () => string | undefined): string | undefined {
  try {
    return read();
  } catch {
    return undefined; // not replaced at build time and no `process` in a worker
  }
}

/** `${SHOPIFY_APP_URL}/pixel/events`; the sandbox default outside production; null (the pixel stays silent) in a production build without an app URL. */
export function pixelEndpoint(): string | null {
  const appUrl = defined(() => process.env.SHOPIFY_APP_URL);
  if (appUrl) return `${appUrl.replace(/\/+$/, '')}/pixel/events`;
  return defined(() => process.env.NODE_ENV) === 'production' ? null : SANDBOX_ENDPOINT;
}
