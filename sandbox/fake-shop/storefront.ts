// The simulated shop's storefront, for `npm run dev` and the browser tests: a product list,
// product pages, an AJAX cart, a cart page, search, and a checkout's contact step. Each page
// publishes Shopify's standard customer events through a stand-in for Shopify's pixel manager
// (storefront-assets/pixel-host.js), which runs the app's REAL web pixel (built from
// extensions/email-pixel by its own build function) in a web worker, like the strict sandbox.
// Like Shopify, the shop knows its logged-in customer (customers.ts) and, with `webhooks`, sends
// the app signed checkouts/create and checkouts/update webhooks of its checkouts, the contact
// step's email included: what vouches for the email the pixel reports.
// Product pages render the app's REAL notify-me block (notify-me-block.ts) with the variants' stock
// (stock.ts), which the page's sandbox controls change, sending the app the stock webhooks; the
// block's form posts through the shop's app proxy (app-proxy.ts) to the app, signed like Shopify.
import fs from 'node:fs';
import path from 'node:path';
import express, { Router, type Request, type Response } from 'express';
import type { FakeShopRecord, FakeShopState } from './state';
import { deliverWebhook } from './webhooks';
import { appProxyRoutes } from './app-proxy';
import type { FakeCatalog } from './catalog';
import { ASSET_PATH, notifyMeBlock, type NotifyMeBlock } from './notify-me-block';
import { changeStock, type FakeStock } from './stock';
import {
  CartStore,
  CATALOG,
  SANDBOX_CUSTOMER,
  cartLine,
  cartObject,
  checkoutObject,
  checkoutWebhook,
  productByHandle,
  productByVariant,
  productVariant,
  variantsOf,
  type CartRecord,
} from './storefront-data';
import {
  ADD_TO_CART_SCRIPT,
  CONTACT_SCRIPT,
  cartPage,
  checkoutPage,
  homePage,
  layout,
  productImageSvg,
  productPage,
  searchPage,
  VARIANT_SCRIPT,
  type PageConfig,
  type PageEvent,
} from './storefront-pages';

export interface StorefrontOptions {
  /** The shop's web pixel key (the pixel's settings.pixelKey), asked on every page; null: the pixel is not active. */
  pixelKey: () => string | null;
  /** The app's URL: the pixel is built to send to `${appUrl}/pixel/events`, as a deploy with SHOPIFY_APP_URL would. */
  appUrl: string;
  /** The shop whose storefront this is; the first shop by default. */
  shop?: string;
  /** Sends signed checkouts/create and checkouts/update webhooks to `${appUrl}/webhooks`, as Shopify does. */
  webhooks?: boolean;
}

const ASSETS: Record<string, string> = {
  'pixel-host.js': 'text/javascript; charset=utf-8',
  'pixel-sandbox-worker.js': 'text/javascript; charset=utf-8',
  'storefront.css': 'text/css; charset=utf-8',
};
const PIXEL_SRC = '/_sandbox/storefront/pixels/email-pixel.js';

function assetsDir(): string {
  const dir = path.join(__dirname, 'storefront-assets');
  if (!fs.existsSync(path.join(dir, 'pixel-host.js'))) throw new Error(`storefront assets not found in ${dir}`);
  return dir;
}

/** The pixelKey of a web pixel's settings JSON string (as the app sends it to webPixelCreate), or null. */
export function pixelKeyOf(settings: string | null | undefined): string | null {
  try {
    const key = (JSON.parse(settings ?? 'null') as { pixelKey?: unknown } | null)?.pixelKey;
    return typeof key === 'string' && key.trim() ? key : null;
  } catch {
    return null;
  }
}

function cookies(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out[part.slice(0, i).trim()] = decodeURIComponent(part.slice(i + 1).trim());
  }
  return out;
}

/** What the storefront shares with the fake shop's Admin API: its products and their stock. */
export interface StorefrontShop {
  catalog: FakeCatalog;
  stock: FakeStock;
}

export function storefrontRoutes(state: FakeShopState, opts: StorefrontOptions, shopData: StorefrontShop): Router {
  const router = Router();
  let block: NotifyMeBlock | undefined;
  // the extension's files, read on first use (a missing file fails the page, not the start)
  const notifyMe = () => (block ??= notifyMeBlock());
  const carts = new CartStore();
  const dir = assetsDir();
  const endpoint = `${opts.appUrl.replace(/\/+$/, '')}/pixel/events`;
  let bundle: Promise<string> | undefined;
  // The extension's own build (esbuild), loaded on first use: only the sandbox needs esbuild.
  const pixelBundle = () =>
    (bundle ??= import('../../extensions/email-pixel/build')
      .then((m) => m.buildPixel({ appUrl: opts.appUrl }))
      .then((b) => b.code)
      .catch((err: unknown) => {
        bundle = undefined;
        throw err;
      }));

  const shopRecord = (): FakeShopRecord => {
    const shop = (opts.shop && state.shops.get(opts.shop.toLowerCase())) || state.shops.values().next().value;
    return shop ?? { domain: 'demo-store.myshopify.com', id: '1', name: 'Demo Store' };
  };
  const originOf = (req: Request) => `${req.protocol}://${req.get('host')}`;
  const cartOf = (req: Request) => carts.get(cookies(req).cart);
  const loggedIn = (req: Request) => cookies(req).customer === SANDBOX_CUSTOMER.id;

  const render = (req: Request, res: Response, title: string, main: string, events: PageEvent[], script = '', head = '') => {
    const shop = shopRecord();
    const key = opts.pixelKey();
    const cart = cartOf(req);
    const config: PageConfig = {
      pixel: {
        active: Boolean(key),
        reason: key ? '' : 'pixel not active: the app has not set a pixel key for this shop',
        settings: key ? { pixelKey: key } : null,
        src: PIXEL_SRC,
        endpoint,
      },
      init: {
        data: {
          customer: loggedIn(req) ? SANDBOX_CUSTOMER : null,
          cart: cartObject(cart, originOf(req)),
          shop: {
            countryCode: 'US',
            myshopifyDomain: shop.domain,
            name: shop.name,
            paymentSettings: { currencyCode: 'USD' },
            storefrontUrl: originOf(req),
          },
          purchasingCompany: null,
        },
      },
      events: [{ name: 'page_viewed', data: {} }, ...events],
    };
    res
      .type('html')
      .set('cache-control', 'no-store')
      .send(layout(title, { shopName: shop.name, cart, loggedIn: loggedIn(req), config }, main, script, head));
  };
  const setCartCookie = (res: Response, cart: CartRecord) => res.cookie('cart', cart.token, { path: '/', httpOnly: true, sameSite: 'lax' });
  /** The checkout's webhook to the app, signed with the app's secret (delivered in the background, as Shopify's). */
  const sendCheckout = (req: Request, topic: 'checkouts/create' | 'checkouts/update', cart: CartRecord) => {
    if (!opts.webhooks) return;
    const payload = checkoutWebhook(cart, originOf(req), loggedIn(req) ? SANDBOX_CUSTOMER : null);
    deliverWebhook(state.opts.apiSecret, opts.appUrl, { topic, shopDomain: shopRecord().domain, payload }).catch(() => undefined);
  };

  router.get('/', (req, res) => {
    const origin = originOf(req);
    render(req, res, 'All products', homePage(), [
      {
        name: 'collection_viewed',
        data: { collection: { id: 'all', title: 'All products', productVariants: CATALOG.map((p) => productVariant(p, origin)) } },
      },
    ]);
  });

  router.get('/products/:handle', (req, res) => {
    const product = productByHandle(String(req.params.handle));
    if (!product) return void res.status(404).type('text').send('no such product');
    const shop = shopRecord().domain;
    const variants = variantsOf(product).map((v) => ({
      id: v.id,
      title: v.title,
      available: shopData.stock.available(shop, v.id),
      quantity: shopData.stock.quantity(shop, v.id),
    }));
    const wanted = typeof req.query.variant === 'string' ? req.query.variant : null;
    // as Shopify's selected_or_first_available_variant
    const selected = variants.find((v) => v.id === wanted) ?? variants.find((v) => v.available) ?? variants[0]!;
    const shown = productByVariant(selected.id) ?? product;
    const blocks = notifyMe().render({
      product: { id: product.productId, title: product.title, handle: product.handle, variants },
      selectedVariantId: wanted,
      customer: loggedIn(req) ? { id: SANDBOX_CUSTOMER.id, email: SANDBOX_CUSTOMER.email } : null,
    });
    render(
      req,
      res,
      product.title,
      productPage(shown, { variants, selected: selected.id, blocks }),
      [{ name: 'product_viewed', data: { productVariant: productVariant(shown, originOf(req)) } }],
      ADD_TO_CART_SCRIPT + VARIANT_SCRIPT,
      notifyMe().head(),
    );
  });

  // the merchant's inventory, in the sandbox: the stock changes and, with `webhooks`, the app hears of it as from Shopify
  router.post('/_sandbox/stock', express.urlencoded({ extended: false, limit: '4kb' }), (req, res) => {
    const body = (req.body ?? {}) as { variant_id?: unknown; quantity?: unknown };
    const quantity = Number(body.quantity);
    if (!Number.isInteger(quantity) || quantity < 0 || quantity > 100_000) return void res.status(422).type('text').send('bad quantity');
    const shop = shopRecord().domain;
    const change = changeStock(shop, shopData.catalog, shopData.stock, String(body.variant_id ?? ''), quantity);
    if (!change) return void res.status(404).type('text').send('no such variant');
    if (opts.webhooks) {
      void (async () => {
        for (const w of change.webhooks)
          await deliverWebhook(state.opts.apiSecret, opts.appUrl, { topic: w.topic, shopDomain: shop, payload: w.payload }).catch(
            () => undefined,
          );
      })();
    }
    res.redirect(303, req.get('referer') ?? '/');
  });

  router.use(
    appProxyRoutes({
      appUrl: opts.appUrl,
      apiSecret: state.opts.apiSecret,
      shop: () => shopRecord().domain,
      customerId: (req) => (loggedIn(req) ? SANDBOX_CUSTOMER.id : null),
    }),
  );
  router.get(`${ASSET_PATH}:name`, (req, res) => {
    const asset = notifyMe().asset(String(req.params.name));
    if (!asset) return void res.status(404).end();
    res.type(asset.type).set('cache-control', 'no-store').sendFile(asset.file);
  });

  router.get('/search', (req, res) => {
    const query = String(req.query.q ?? '').trim();
    const results = CATALOG.filter((p) => query && `${p.title} ${p.type} ${p.vendor}`.toLowerCase().includes(query.toLowerCase()));
    const origin = originOf(req);
    render(req, res, `Search: ${query}`, searchPage(query, results), [
      { name: 'search_submitted', data: { searchResult: { query, productVariants: results.map((p) => productVariant(p, origin)) } } },
    ]);
  });

  router.post('/cart/add.js', express.json(), (req, res) => {
    const body = (req.body ?? {}) as { id?: unknown; quantity?: unknown };
    const product = productByVariant(String(body.id ?? ''));
    const quantity = Number(body.quantity ?? 1);
    if (!product || !Number.isInteger(quantity) || quantity < 1)
      return void res.status(422).json({ status: 422, description: 'Cannot find variant' });
    const cart = carts.getOrCreate(cookies(req).cart);
    cart.lines.set(product.variantId, (cart.lines.get(product.variantId) ?? 0) + quantity);
    setCartCookie(res, cart);
    const origin = originOf(req);
    res.json({ cartLine: cartLine(product, quantity, origin), cart: cartObject(cart, origin) });
  });

  router.get('/cart', (req, res) => {
    const cart = cartOf(req);
    render(req, res, 'Your cart', cartPage(cart), [{ name: 'cart_viewed', data: { cart: cartObject(cart, originOf(req)) } }]);
  });

  router.get('/checkout', (req, res) => {
    const cart = cartOf(req);
    if (!cart || !cartObject(cart, '')) return void res.redirect('/cart');
    const created = !cart.checkout;
    carts.checkout(cart);
    if (created) sendCheckout(req, 'checkouts/create', cart);
    render(
      req,
      res,
      'Checkout',
      checkoutPage(cart, cart.checkout!.email),
      [{ name: 'checkout_started', data: { checkout: checkoutObject(cart, originOf(req)) } }],
      CONTACT_SCRIPT,
    );
  });

  router.post('/checkout/contact', express.json(), (req, res) => {
    const cart = cartOf(req);
    const email = String((req.body as { email?: unknown } | undefined)?.email ?? '').trim();
    if (!cart?.checkout) return void res.status(404).json({ error: 'no checkout' });
    if (!/^[^\s@]+@[^\s@]+$/.test(email)) return void res.status(422).json({ error: 'invalid email' });
    cart.checkout.email = email;
    sendCheckout(req, 'checkouts/update', cart);
    res.json({ checkout: checkoutObject(cart, originOf(req)) });
  });

  router.post('/account/login', (req, res) => {
    res.cookie('customer', SANDBOX_CUSTOMER.id, { path: '/', httpOnly: true, sameSite: 'lax' });
    res.redirect(303, req.get('referer') ?? '/');
  });
  router.post('/account/logout', (req, res) => {
    res.clearCookie('customer', { path: '/' });
    res.redirect(303, req.get('referer') ?? '/');
  });

  router.get('/favicon.ico', (_req, res) => void res.status(204).end());
  router.get('/_sandbox/storefront/images/:file', (req, res) => {
    const product = productByHandle(String(req.params.file).replace(/\.svg$/, ''));
    if (!product) return void res.status(404).end();
    res.type('image/svg+xml').send(productImageSvg(product));
  });
  router.get(PIXEL_SRC, (_req, res) => {
    pixelBundle().then(
      (code) => res.type('text/javascript; charset=utf-8').set('cache-control', 'no-store').send(code),
      (err: unknown) =>
        res
          .status(500)
          .type('text/javascript')
          .send(`throw new Error(${JSON.stringify(`pixel build failed: ${(err as Error).message}`)});`),
    );
  });
  router.get('/_sandbox/storefront/:asset', (req, res) => {
    const name = String(req.params.asset);
    const type = ASSETS[name];
    if (!type) return void res.status(404).end();
    res.type(type).set('cache-control', 'no-store').sendFile(path.join(dir, name));
  });
  return router;
}
