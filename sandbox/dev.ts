// `npm run dev`: the connector on embedded SQLite in sandbox mode, with the bundled service
// emulator and a simulated shop, so a newcomer sees it work with no accounts. It serves dev
// session tokens for any shop, so it runs only on the published sandbox values (loadDevConfig
// refuses production settings) and listens on the loopback interface alone.
import { createDevSessionMinter } from '../src/http/dev-session';
import { configOrExit, handleSignals } from '../src/main';
import { startFakeShop } from './fake-shop';
import { pixelKeyOf } from './fake-shop/storefront';
import {
  sampleCheckout,
  sampleCustomer2026,
  sampleEmailConsent,
  sampleFulfillment,
  sampleFulfillmentEvent,
  sampleOrder,
  samplePurchasingSummary,
  sampleSmsConsent,
  sampleTags,
  SHIPMENT_SEQUENCE,
} from './samples';
import { startServiceEmulator } from './service-emulator';
import { DEFAULT_SCOPES, loadDevConfig, SANDBOX_DEFAULTS } from '../src/config';
import { startServer } from '../src/app/server';

const DEV_SHOP = 'demo-store.myshopify.com';
const FAKE_SHOP_PORT = 4011;
/** Every server the sandbox starts (the app, the emulator, the simulated shop) is reachable from this machine only. */
const DEV_HOST = '127.0.0.1';

/**
 * The shipping topics play one story: fulfillments/create ships the last simulated order, and
 * each fulfillment_events/create moves that fulfillment one status on (in transit, out for
 * delivery, delivered; pressed again, delivered repeats and sends nothing new).
 * fulfillments/update gives the same fulfillment a shipment_status.
 */
const story = { order: 0, fulfillment: 0, step: 0, customer: 0, subscribed: false, orders: 0 };

/** A sample payload for each topic the Simulate panel offers. */
function samplePayload(topic: string, n: number): unknown {
  switch (topic) {
    case 'orders/create':
      story.order = n;
      return { ...sampleOrder(n), cancelled_at: null, cancel_reason: null };
    case 'orders/paid':
    case 'orders/cancelled':
      return {
        ...sampleOrder(n),
        cancelled_at: topic === 'orders/cancelled' ? new Date().toISOString() : null,
        cancel_reason: topic === 'orders/cancelled' ? 'customer' : null,
      };
    case 'orders/fulfilled':
      return {
        ...sampleOrder(n),
        fulfillment_status: 'fulfilled',
        fulfillments: [
          {
            id: n,
            status: 'success',
            tracking_number: `1Z${n}`,
            tracking_numbers: [`1Z${n}`],
            tracking_url: `https://track.example.com/1Z${n}`,
            tracking_urls: [`https://track.example.com/1Z${n}`],
          },
        ],
      };
    case 'refunds/create':
      return {
        id: 6_000_000 + n,
        order_id: sampleOrder(n).id,
        created_at: new Date().toISOString(),
        note: null,
        refund_line_items: [],
        transactions: [{ kind: 'refund', status: 'success', amount: '12.00', currency: 'USD' }],
      };
    case 'checkouts/create':
    case 'checkouts/update':
      return sampleCheckout(n, { at: new Date() });
    // customers as API 2026-10 sends them: consent, tags and purchases come on topics of their
    // own, about the customer last created (one is created first when there is none)
    case 'customers/create':
      Object.assign(story, { customer: n, subscribed: false, orders: 0 });
      return { ...sampleCustomer2026(n), updated_at: new Date().toISOString() };
    case 'customers/update':
      if (!story.customer) story.customer = n;
      return { ...sampleCustomer2026(story.customer), updated_at: new Date().toISOString() };
    case 'customers_email_marketing_consent/update':
      if (!story.customer) story.customer = n;
      story.subscribed = !story.subscribed;
      return sampleEmailConsent(story.customer, story.subscribed ? 'subscribed' : 'unsubscribed');
    case 'customers_marketing_consent/update':
      if (!story.customer) story.customer = n;
      return sampleSmsConsent(story.customer, 'subscribed');
    case 'customer.tags_added':
    case 'customer.tags_removed':
      if (!story.customer) story.customer = n;
      return sampleTags(story.customer, ['vip']);
    case 'customers/purchasing_summary':
      if (!story.customer) story.customer = n;
      story.orders += 1;
      return samplePurchasingSummary(story.customer, story.orders, story.orders * 42.5);
    case 'fulfillments/create':
      Object.assign(story, { fulfillment: n, step: 0 });
      return sampleFulfillment(n, { order: story.order || n });
    case 'fulfillments/update': {
      if (!story.fulfillment) Object.assign(story, { fulfillment: n, step: 0 });
      const status = SHIPMENT_SEQUENCE[Math.max(0, story.step - 1)] ?? 'in_transit';
      return sampleFulfillment(story.fulfillment, {
        order: story.order || story.fulfillment,
        shipmentStatus: status,
        updatedAt: new Date(),
      });
    }
    case 'fulfillment_events/create': {
      // an event before any fulfillments/create: a fresh fulfillment, as Shopify's unordered delivery may show
      if (!story.fulfillment) Object.assign(story, { fulfillment: n, step: 0 });
      const status = SHIPMENT_SEQUENCE[Math.min(story.step, SHIPMENT_SEQUENCE.length - 1)]!;
      story.step += 1;
      return sampleFulfillmentEvent(story.fulfillment, status, { order: story.order || story.fulfillment, at: new Date() });
    }
    default:
      return {};
  }
}

async function dev(): Promise<void> {
  const env: Record<string, string | undefined> = { ...process.env };
  // The emulator runs when the service URL is the sandbox default; the fake shop when no admin origin is set.
  const useEmulator = !env.SERVICE_BASE_URL || env.SERVICE_BASE_URL === SANDBOX_DEFAULTS.SERVICE_BASE_URL;
  const useFakeShop = !env.SHOPIFY_ADMIN_ORIGIN;
  if (useFakeShop) env.SHOPIFY_ADMIN_ORIGIN = `http://${DEV_HOST}:${FAKE_SHOP_PORT}`;
  const config = configOrExit(env, loadDevConfig);

  const emulator = useEmulator ? await startServiceEmulator({ port: Number(new URL(config.service.baseUrl).port), host: DEV_HOST }) : null;
  const workspace = emulator?.createWorkspace({ name: 'Sandbox Workspace' });
  const shop = useFakeShop
    ? await startFakeShop({
        apiKey: config.shopify.apiKey,
        apiSecret: config.shopify.apiSecret,
        port: FAKE_SHOP_PORT,
        host: DEV_HOST,
        // read_products granted at install, as a merchant who turned a storefront feature on: the
        // storefront's notify-me form has the variant it names checked against the catalog
        shops: [{ domain: DEV_SHOP, id: '548380009', name: 'Demo Store', scopes: `${DEFAULT_SCOPES},read_products` }],
        // the storefront runs the web pixel with the settings the app gave it (webPixelCreate), as Shopify does,
        // and sends the app its checkouts' signed webhooks, which vouch for the email typed at checkout
        storefront: {
          appUrl: config.shopify.appUrl,
          webhooks: true,
          pixelKey: (): string | null => pixelKeyOf(shop?.webPixel(DEV_SHOP)?.settings),
        },
      })
    : null;
  let n = Math.floor(Date.now() / 1000) % 100_000;

  const running = await startServer(config, {
    host: DEV_HOST,
    ui: {
      mintDevSessionToken: createDevSessionMinter(config),
      devShop: DEV_SHOP,
      simulate: shop
        ? (topic, domain) => shop.sendWebhook(running.url, { topic, shopDomain: domain, payload: samplePayload(topic, (n += 1)) })
        : undefined,
      // the merchant grants optional scopes in the simulated shop; like Shopify, it then sends app/scopes_update
      grantScopes: shop
        ? (domain, scopes) =>
            shop.sendWebhook(running.url, { topic: 'app/scopes_update', shopDomain: domain, payload: shop.grantScopes(domain, scopes) })
        : undefined,
      sandboxLinks: emulator ? [{ label: 'Events received by the service emulator', href: `${emulator.url}/_sandbox/events` }] : [],
      // the admin page's back-in-stock card links here: the simulated shop has no theme editor
      notifyMePreview: shop
        ? { label: 'the simulated storefront’s sold-out Merino Socks', href: `${shop.url}/products/merino-socks?variant=45105` }
        : undefined,
    },
  });
  handleSignals({
    logger: running.logger,
    close: async () => {
      await running.close();
      await Promise.all([emulator?.close(), shop?.close()]);
    },
  });
  // install the simulated shop, as Shopify's managed install plus token exchange would
  if (shop) {
    const res = await fetch(`${running.url}/api/connection`, { headers: { authorization: `Bearer ${shop.mintSessionToken(DEV_SHOP)}` } });
    if (res.status !== 200) running.logger.warn({ status: res.status }, 'could not install the simulated shop');
  }
  const lines = [
    '',
    '  Connector running in sandbox mode',
    `    Admin page:       ${config.shopify.appUrl}/  (acts as ${DEV_SHOP})`,
    `    Health:           ${running.url}/healthz   Metrics: ${running.opsUrl ?? running.url}/metrics`,
    emulator
      ? `    Service emulator: ${emulator.url}   (received events: ${emulator.url}/_sandbox/events)`
      : `    Email service:    ${config.service.baseUrl}`,
    shop ? `    Simulated shop:   ${shop.url}  (${DEV_SHOP}, installed; its storefront, running the web pixel: ${shop.url}/)` : '',
    shop
      ? `    Back in stock:    ${shop.url}/products/merino-socks?variant=45105  (the notify-me block on a sold-out size; restock it below the product)`
      : '',
    workspace ? `\n  Paste this sandbox API key in the page to connect: ${workspace.apiKey}` : '',
    '  Then use the Simulate panel on the page to send orders, checkouts and customers.',
    '',
  ];
  process.stdout.write(lines.filter((l) => l !== '').join('\n') + '\n\n');
}

dev().catch((err: unknown) => {
  process.stderr.write(`dev start-up failed: ${(err as Error).message}\n`);
  process.exit(1);
});
