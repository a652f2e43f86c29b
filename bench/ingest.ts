// Ingest of webhooks, in one table, side by side from one run: the bare HMAC route (the
// ceiling), the connector's web role on SQLite and on PostgreSQL, and the default deployment
// (ROLE=all on SQLite) (method: bench/intake-bench.ts). The load is 200 distinct signed
// orders/create bodies cycled, a fresh X-Shopify-Webhook-Id on every request, so each one is a
// new webhook the app verifies, dedupes and stores.
import { randomBytes } from 'node:crypto';
import { sampleOrder } from '../sandbox/samples';
import { intakeMethod, runIntakeBench } from './intake-bench';
import { API_SECRET, heading, runMain, signedOrderRequests, signedWebhook } from './lib';

const SHOP = 'bench-store.myshopify.com';
const BODIES = 200;

/** The open loop's requests (built in the generator's process): a fresh webhook id on every request; the 200 bodies are signed once. */
export function openRequests() {
  const prefix = randomBytes(4).toString('hex');
  const signed = Array.from({ length: BODIES }, (_, n) => signedWebhook(SHOP, 'orders/create', sampleOrder(n), ''));
  return (i: number) => {
    const w = signed[i % BODIES]!;
    return { body: w.body, headers: { ...w.headers, 'x-shopify-webhook-id': `open-${prefix}-${i}` } };
  };
}

export async function runIngest(): Promise<void> {
  heading(
    'Ingest: stage 1 (POST /webhooks) beside the bare HMAC route, and stage 2',
    intakeMethod.describe({
      requests: `${BODIES} distinct signed orders/create bodies cycled, a fresh webhook id on every request.`,
      unit: 'receipts',
    }),
  );
  await runIntakeBench({
    bare: { name: 'bare express route (HMAC only)', env: { SHOPIFY_API_SECRET: API_SECRET } },
    shop: SHOP,
    closedRequests: () => signedOrderRequests(SHOP, BODIES),
    openRequests: { module: 'ingest', factory: 'openRequests' },
    unitsPerReceipt: 1,
    unit: 'receipts',
  });
}

if (require.main === module) runMain(runIngest);
