// The storefront pixel's intake, in one table, side by side from one run: a bare route that only
// reads the batch (the ceiling), the connector on SQLite and on PostgreSQL (method:
// bench/intake-bench.ts). Each request is a batch of 5 events as the web pixel sends it
// (extensions/email-pixel, wire format): 4 product_viewed and 1 product_added_to_cart, a fresh
// client id and event ids on every request; one batch in 5 carries a shopper's email (a
// logged-in customer), the others stay anonymous and wait in stage 2 for an identity.
import { randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import { PIXEL_PATH } from '../src/http/pixel.route';
import { intakeMethod, runIntakeBench } from './intake-bench';
import { heading, runMain, withPrisma } from './lib';

const SHOP = 'pixel-bench.myshopify.com';
const KEY = 'pxbench_0123456789abcdef';
const BODIES = 100;
const STORE = `https://${SHOP}`;

function batch(n: number, id: string): string {
  const product = (k: number) => ({
    id: `${8100 + ((n + k) % 40)}`, title: `Product ${(n + k) % 40}`, url: `/products/p-${(n + k) % 40}`, vendor: 'Bench', type: 'Kitchen',
  });
  const variant = (k: number) => ({ id: `${45100 + ((n + k) % 40)}`, title: 'Default Title', sku: `SKU-${k}`, price: { amount: 18 + k, currencyCode: 'USD' }, image: { src: `//cdn.example/p-${k}.png` }, product: product(k) });
  const at = new Date().toISOString();
  const events = [0, 1, 2, 3].map((k) => ({ id: `${id}-${k}`, name: 'product_viewed', timestamp: at, url: `${STORE}/products/p-${k}`, data: { productVariant: variant(k) } }));
  events.push({
    id: `${id}-4`, name: 'product_added_to_cart', timestamp: at, url: `${STORE}/products/p-0`,
    data: { cartLine: { quantity: 1, cost: { totalAmount: { amount: 18, currencyCode: 'USD' } }, merchandise: variant(0) } } as never,
  });
  const customer = n % 5 === 0 ? { email: `shopper-${n}@example.com` } : null;
  // the pixel writes v, key and client_id first (the endpoint reads them without parsing)
  return JSON.stringify({ v: 1, key: KEY, client_id: `c-${id}`, consent: { marketing: true, analytics: true }, customer, events });
}

const HEADERS = { 'content-type': 'text/plain;charset=UTF-8', origin: STORE };

/** The open loop's requests (built in the generator's process): a fresh client id and event ids on every request. */
export function openRequests() {
  const prefix = randomBytes(4).toString('hex');
  return (i: number) => ({ path: PIXEL_PATH, headers: HEADERS, body: batch(i % BODIES, `${prefix}-${i}`) });
}

export async function runPixel(): Promise<void> {
  heading(
    'Storefront pixel: stage 1 (POST /pixel/events) beside a bare route, and stage 2',
    intakeMethod.describe({
      requests: `${BODIES} batches of 5 events (4 product_viewed, 1 product_added_to_cart; one in 5 with a logged-in shopper's email) cycled, a fresh client id and event ids on every request.`,
      unit: 'events',
    }),
  );
  await runIntakeBench({
    bare: { name: 'bare express route (reads the batch)', env: {} },
    shop: SHOP,
    // the shop's pixel, active, as activation leaves it
    prepare: (db, shopId) => withPrisma(db, (prisma) => prisma.webPixel.create({ data: { shopId, key: KEY, state: 'active', updatedAt: new Date() } })).then(() => undefined),
    // one shop takes all the load: its limit is raised, so every batch is stored, not dropped
    appEnv: { PIXEL_RATE_PER_SHOP: '1000000' },
    // each body built per request: autocannon's [<id>] replacement inside a body keeps the
    // template's content-length, so the server waited for bytes that never came (0 req/s)
    closedRequests: (): autocannon.Request[] => {
      const prefix = randomBytes(4).toString('hex');
      let i = 0;
      return [{ method: 'POST', path: PIXEL_PATH, headers: HEADERS, setupRequest: (req) => ({ ...req, body: batch(i % BODIES, `${prefix}-k${i++}`) }) }];
    },
    openRequests: { module: 'pixel', factory: 'openRequests' },
    unitsPerReceipt: 5,
    unit: 'events',
  });
}

if (require.main === module) runMain(runPixel);
