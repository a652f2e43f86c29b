// Runs the pixel's real entry point (extensions/email-pixel/src/index.ts, with the real
// `register` of @shopify/web-pixels-extension) against a fake of Shopify's sandbox: the global
// `shopify.extend` that `register` calls, analytics.subscribe, browser.sendBeacon, init,
// settings and customerPrivacy. Events are Shopify-shaped (see fixtures.ts).
import type { WireBatch } from '../../../extensions/email-pixel/src/pixel';

export interface Beacon {
  url: string;
  body: string;
}

export interface HarnessOptions {
  settings?: Record<string, unknown>;
  /** Overrides of init (context, data, customerPrivacy). */
  customer?: Record<string, unknown> | null;
  customerPrivacy?: Record<string, unknown> | null;
  /** What browser.sendBeacon answers: true (queued), false (refused) or 'reject'. */
  beacon?: boolean | 'reject';
}

export interface Harness {
  /** Publishes a standard event to the pixel's subscribers, as Shopify's event bus would. */
  emit(event: { name: string }): void;
  /** visitorConsentCollected on the customer-privacy bus. */
  consent(customerPrivacy: Record<string, unknown>): void;
  beacons: Beacon[];
  /** The beacons' bodies, parsed. */
  batches(): WireBatch[];
  /** fetch(url, init) calls made by the pixel (the fallback). */
  fetches: Array<{ url: string; init: RequestInit }>;
  /** The event names the pixel subscribed to. */
  subscribed: string[];
  extensionPoint: string | undefined;
}

export const PIXEL_KEY = 'pk_test_5f2c9a';

export function fullPrivacy(): Record<string, boolean> {
  return { analyticsProcessingAllowed: true, marketingAllowed: true, preferencesProcessingAllowed: false, saleOfDataAllowed: false };
}

/** Loads a fresh copy of the pixel (its module state is per load) with a fake sandbox API. */
export function loadPixel(opts: HarnessOptions = {}): Harness {
  const subscribers = new Map<string, Array<(e: unknown) => void>>();
  const privacySubscribers: Array<(p: unknown) => void> = [];
  const beacons: Beacon[] = [];
  const fetches: Harness['fetches'] = [];
  const subscribed: string[] = [];
  const beaconAnswer = opts.beacon ?? true;
  const api = {
    settings: opts.settings ?? { pixelKey: PIXEL_KEY },
    analytics: {
      subscribe(name: string, callback: (e: unknown) => void) {
        subscribed.push(name);
        subscribers.set(name, [...(subscribers.get(name) ?? []), callback]);
        return () => true;
      },
    },
    browser: {
      sendBeacon: (url: string, body?: string) => {
        beacons.push({ url, body: body ?? '' });
        return beaconAnswer === 'reject' ? Promise.reject(new Error('sandbox gone')) : Promise.resolve(beaconAnswer);
      },
      cookie: { get: async () => '', set: async () => '' },
    },
    init: {
      context: {},
      data: {
        customer: opts.customer ?? null,
        cart: null,
        shop: { name: 'Demo Store', myshopifyDomain: 'demo-store.myshopify.com' },
        purchasingCompany: null,
      },
      customerPrivacy: opts.customerPrivacy === undefined ? fullPrivacy() : opts.customerPrivacy,
    },
    customerPrivacy: {
      subscribe(name: string, callback: (p: unknown) => void) {
        if (name === 'visitorConsentCollected') privacySubscribers.push(callback);
        return () => true;
      },
    },
    _pixelInfo: {},
  };
  const harness: Harness = {
    emit(event) {
      for (const cb of subscribers.get(event.name) ?? []) cb(structuredClone(event));
    },
    consent(customerPrivacy) {
      for (const cb of privacySubscribers) cb({ customerPrivacy });
    },
    beacons,
    batches: () => beacons.map((b) => JSON.parse(b.body) as WireBatch),
    fetches,
    subscribed,
    extensionPoint: undefined,
  };
  (globalThis as { shopify?: unknown }).shopify = {
    extend(point: string, extend: (a: typeof api) => void) {
      harness.extensionPoint = point;
      extend(api);
    },
  };
  globalThis.fetch = ((url: string, init: RequestInit) => {
    fetches.push({ url, init });
    return Promise.resolve(new Response(null, { status: 204 }));
  }) as typeof fetch;
  jest.isolateModules(() => {
    require('../../../extensions/email-pixel/src/index');
  });
  return harness;
}

/** Lets the promise chains of sendBeacon → fetch fallback run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}
