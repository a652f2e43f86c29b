// Where an import downloads its bulk-operation result from: in production only from Shopify's
// storage over https; in the sandbox and tests, from the simulated shop as well.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { isShopifyStorageUrl } from '../../../src/backfill/result-url';
import { BulkSourceError, createShopifyBulkSource } from '../../../src/backfill/shopify-bulk';
import { createLogger } from '../../../src/observability/logger';
import type { ShopifyApi } from '../../../src/integrations/shopify/api';
import type { OfflineTokens } from '../../../src/integrations/shopify/tokens';

const source = (production: boolean) =>
  createShopifyBulkSource({
    shopify: {} as ShopifyApi,
    tokens: {} as OfflineTokens,
    logger: createLogger('silent'),
    production,
    downloadTimeoutMs: 2_000,
  });

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

describe('isShopifyStorageUrl', () => {
  it.each([
    'https://storage.googleapis.com/shopify-tiers-assets-prod-us-east1/abc?GoogleAccessId=x&Expires=1&Signature=y',
    'https://storage.googleapis.com/shopify/dyfkl3g72empyyoenvmtidlm9o4g',
    'https://bulk.shopifycloud.com/results/1.jsonl',
    'https://files.cdn.shopifycdn.com/results/1.jsonl',
    'https://STORAGE.googleapis.com/x',
  ])('accepts %s', (url) => {
    expect(isShopifyStorageUrl(new URL(url))).toBe(true);
  });

  it.each([
    'http://storage.googleapis.com/shopify/x', // not https
    'https://storage.googleapis.com:8443/shopify/x', // another port
    'https://user:pw@storage.googleapis.com/shopify/x', // credentials
    'https://storage.googleapis.com.evil.example/x', // a look-alike
    'https://evilshopifycloud.com/x', // no dot before the suffix
    'https://shopifycloud.com.evil.example/x',
    'https://169.254.169.254/latest/meta-data/', // a cloud metadata service
    'https://127.0.0.1/results/1.jsonl',
    'https://demo-store.myshopify.com/results/1.jsonl',
  ])('refuses %s', (url) => {
    expect(isShopifyStorageUrl(new URL(url))).toBe(false);
  });
});

describe('downloading a bulk result', () => {
  it('in production, refuses a URL off Shopify storage with a clear error, before connecting anywhere', async () => {
    let connections = 0;
    const server = net.createServer((s) => {
      connections += 1;
      s.destroy();
    });
    const port = await listen(server);
    try {
      for (const url of [`https://127.0.0.1:${port}/results/1.jsonl?Signature=s3cret`, `http://127.0.0.1:${port}/results/1.jsonl`]) {
        const err = await source(true)
          .open(url, 0, new AbortController().signal)
          .then(
            () => null,
            (e: unknown) => e,
          );
        expect(err).toBeInstanceOf(BulkSourceError);
        expect((err as BulkSourceError).kind).toBe('failed');
        expect((err as Error).message).toMatch(
          /^Shopify gave a result URL on https?:\/\/127\.0\.0\.1:\d+, which is not Shopify's storage \(https on storage\.googleapis\.com, \*\.shopifycloud\.com, \*\.shopifycdn\.com\): not fetched$/,
        );
        // the signed part of the URL is a credential: never in an error the merchant sees
        expect((err as Error).message).not.toContain('s3cret');
      }
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });

  it('outside production, fetches the simulated shop over plain http', async () => {
    const server = http.createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/jsonl' }).end('{"id":"gid://shopify/Customer/1"}\n'),
    );
    const port = await listen(server);
    try {
      const opened = await source(false).open(`http://127.0.0.1:${port}/results/1.jsonl`, 0, new AbortController().signal);
      let text = '';
      for await (const chunk of opened.chunks) text += Buffer.from(chunk).toString();
      expect(text).toBe('{"id":"gid://shopify/Customer/1"}\n');
    } finally {
      server.close();
    }
  });
});
