// The storefront pixel's intake, in one table, side by side from one run: a bare route that only
// reads the batch (the ceiling), the connector's web role on SQLite and on PostgreSQL, and the
// default deployment (ROLE=all on SQLite) (method: bench/intake-bench.ts). Each request is a
// batch of 5 events as the web pixel sends it (extensions/email-pixel, wire format, with the
// product fields older bundles still send): 4 product_viewed and 1 product_added_to_cart, a fresh
// client id and event ids on every request; one batch in 5 carries a shopper's email (a logged-in
// customer), the others stay anonymous and wait in stage 2 for an identity.
// As on a shop that has run a while, the 40 products are in the product cache and the 20 shoppers'
// emails are vouched for (a customers webhook would have done it), so stage 2 needs no Admin API
// call: the worker's own count of them is printed with its figures (there is no Shopify here, a
// call would fail and drop the events). The per-IP and per-email limits are raised, as the
// per-shop one is: all the load comes from one address and 20 emails.
import { randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import { PIXEL_PATH } from '../src/http/pixel.route';
import { createEmailKeys } from '../src/processing/storefront/email-keys';
import { intakeMethod, runIntakeBench } from './intake-bench';
import { ENCRYPTION_KEY, heading, runMain, withPrisma } from './lib';

const SHOP = 'pixel-bench.myshopify.com';
const KEY = 'pxbench_0123456789abcdef';
const BODIES = 100;
const PRODUCTS = 40;
const STORE = `https://${SHOP}`;
const shopperEmail = (n: number) => `shopper-${n}@example.com`;

function batch(n: number, id: string): string {
  const product = (k: number) => ({
    id: `${8100 + ((n + k) % 40)}`,
    title: `Product ${(n + k) % 40}`,
    url: `/products/p-${(n + k) % 40}`,
    vendor: 'Bench',
    type: 'Kitchen',
  });
  const variant = (k: number) => ({
    id: `${45100 + ((n + k) % 40)}`,
    title: 'Default Title',
    sku: `SKU-${k}`,
    price: { amount: 18 + k, currencyCode: 'USD' },
    image: { src: `//cdn.example/p-${k}.png` },
    product: product(k),
  });
  const at = new Date().toISOString();
  const events = [0, 1, 2, 3].map((k) => ({
    id: `${id}-${k}`,
    name: 'product_viewed',
    timestamp: at,
    url: `${STORE}/products/p-${k}`,
    data: { productVariant: variant(k) },
  }));
  events.push({
    id: `${id}-4`,
    name: 'product_added_to_cart',
    timestamp: at,
    url: `${STORE}/products/p-0`,
    data: { cartLine: { quantity: 1, cost: { totalAmount: { amount: 18, currencyCode: 'USD' } }, merchandise: variant(0) } } as never,
  });
  const customer = n % 5 === 0 ? { email: shopperEmail(n) } : null;
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
      requests: `${BODIES} batches of 5 events (4 product_viewed, 1 product_added_to_cart; one in 5 with a logged-in shopper's email) cycled, a fresh client id and event ids on every request. The shop's ${PRODUCTS} products are cached and its ${BODIES / 5} shoppers' emails vouched for, as on a shop that has run a while: stage 2 prints the Admin API calls it made.`,
      unit: 'events',
    }),
  );
  await runIntakeBench({
    bare: { name: 'bare express route (reads the batch)', env: {} },
    shop: SHOP,
    // the shop's pixel, active, as activation leaves it (read_products granted); its products
    // cached and its shoppers' emails vouched for, as after a while in production
    prepare: (db, shopId) =>
      withPrisma(db, async (prisma) => {
        const now = new Date();
        await prisma.webPixel.create({ data: { shopId, key: KEY, state: 'active', updatedAt: now } });
        const session = await prisma.session.findFirstOrThrow({ where: { shop: SHOP, isOnline: false } });
        await prisma.session.update({
          where: { id: session.id },
          data: { scope: `${session.scope},write_pixels,read_customer_events,read_products` },
        });
        await prisma.productInfo.createMany({
          data: Array.from({ length: PRODUCTS }, (_, k) => ({
            shopId,
            productId: `${8100 + k}`,
            handle: `p-${k}`,
            title: `Product ${k}`,
            currency: 'USD',
            url: `${STORE}/products/p-${k}`,
            imageUrl: `https://cdn.example/p-${k}.png`,
            variantImages: JSON.stringify({ [`${45100 + k}`]: null }),
            variants: JSON.stringify({ [`${45100 + k}`]: { title: 'Default Title', sku: `SKU-${k}`, price: 18 + (k % 4) } }),
            fetchedAt: now,
          })),
        });
        const keys = createEmailKeys({ key: Buffer.from(ENCRYPTION_KEY, 'base64') });
        await prisma.pixelShopper.createMany({
          data: Array.from({ length: BODIES / 5 }, (_, i) => ({
            shopId,
            emailKey: keys.of(shopId, shopperEmail(i * 5)),
            state: 'vouched',
            source: 'customer',
            checkedAt: now,
            expiresAt: new Date(now.getTime() + 30 * 86_400_000),
          })),
        });
      }),
    // one shop, one address and 20 emails take all the load: their limits are raised, so every batch is stored and processed, not dropped
    appEnv: {
      PIXEL_RATE_PER_SHOP: '1000000',
      PIXEL_RATE_PER_IP: '1000000',
      PIXEL_EVENTS_PER_EMAIL_DAY: '10000000',
      PIXEL_ABANDONMENTS_PER_EMAIL_DAY: '10000000',
    },
    stage2Note: (metrics) => {
      const count = (re: RegExp) => [...metrics.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
      const calls = count(/^connector_pixel_admin_api_calls_total\{[^}]*\} (\d+)$/gm);
      const dropped = count(/^connector_pixel_products_dropped_total\{[^}]*\} (\d+)$/gm);
      const vouched = count(/^connector_pixel_claims_total\{outcome="vouched"\} (\d+)$/gm);
      return `stage 2 made ${calls} Admin API call(s) (products and customers: the cache answered the rest), dropped ${dropped} event(s) for their product, identified ${vouched} visitor(s) by a vouched email`;
    },
    // each body built per request: autocannon's [<id>] replacement inside a body keeps the
    // template's content-length, so the server would wait for bytes that never come
    closedRequests: (): autocannon.Request[] => {
      const prefix = randomBytes(4).toString('hex');
      let i = 0;
      return [
        {
          method: 'POST',
          path: PIXEL_PATH,
          headers: HEADERS,
          setupRequest: (req) => ({ ...req, body: batch(i % BODIES, `${prefix}-k${i++}`) }),
        },
      ];
    },
    openRequests: { module: 'pixel', factory: 'openRequests' },
    unitsPerReceipt: 5,
    unit: 'events',
  });
}

if (require.main === module) runMain(runPixel);
