// Loads @shopify/shopify-api's Node adapter (it installs fetch and request conversion) and gives
// typed access to the runtime's fetch hook. Plain require: with this project's "node"
// module resolution, TypeScript would otherwise resolve these subpaths to the library's .ts
// sources and type-check them under our stricter settings.
/* eslint-disable @typescript-eslint/no-require-imports */
require('@shopify/shopify-api/adapters/node');

type FetchFunc = (...params: Parameters<typeof fetch>) => Promise<Response>;

const runtime = require('@shopify/shopify-api/runtime') as {
  abstractFetch: FetchFunc;
  setAbstractFetchFunc(func: FetchFunc): void;
};

/** The fetch the library currently uses for every request to Shopify. */
export function currentLibraryFetch(): FetchFunc {
  return runtime.abstractFetch;
}

/** Replaces the library's process-wide fetch. */
export function setLibraryFetch(func: FetchFunc): void {
  runtime.setAbstractFetchFunc(func);
}
