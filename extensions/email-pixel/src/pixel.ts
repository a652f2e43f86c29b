// The pixel: collects the storefront events the app needs (browse and cart abandonment), trims
// them, and sends them in small batches to the app's POST /pixel/events (wire format in
// README.md). Written for Shopify's strict sandbox: no DOM, only the API `register` hands over,
// `fetch` and timers. Plain promises (no async/await): Shopify CLI compiles to ES6.
import { trimEventData } from './trim';

/** The standard events the pixel subscribes to; nothing else is ever sent. */
export const SUBSCRIBED_EVENTS = [
  'page_viewed',
  'product_viewed',
  'product_added_to_cart',
  'cart_viewed',
  'checkout_started',
  'checkout_contact_info_submitted',
  'search_submitted',
] as const;

/** A batch is sent when it holds this many events... */
export const FLUSH_SIZE = 10;
/** ...or this long after its first event. */
export const FLUSH_DELAY_MS = 1000;
/** Never more events in one request. */
export const MAX_EVENTS_PER_REQUEST = 50;
/** Beacons and keepalive fetches are limited to 64 KiB in flight; a larger batch is split. */
export const MAX_BODY_BYTES = 60_000;
/** Events after which the shopper usually leaves the page: their batch goes at once. */
const SEND_NOW: readonly string[] = ['product_added_to_cart', 'checkout_started', 'checkout_contact_info_submitted'];
const CONTACT_EVENT = 'checkout_contact_info_submitted';

// The part of Shopify's ExtensionApi the pixel uses (structurally; tests pass fakes of it).
interface CustomerPrivacy {
  analyticsProcessingAllowed?: boolean;
  marketingAllowed?: boolean;
}
export interface PixelEvent {
  id: string;
  name: string;
  timestamp: string;
  clientId: string;
  context?: { document?: { location?: { href?: unknown } } };
  data?: unknown;
}
export interface PixelApi {
  settings: { [key: string]: unknown };
  analytics: { subscribe(name: string, callback: (event: PixelEvent) => void): unknown };
  browser: { sendBeacon(url: string, body?: string): Promise<boolean> };
  init: { data?: { customer?: { email?: string | null } | null } | null; customerPrivacy?: CustomerPrivacy | null };
  customerPrivacy?: {
    subscribe(name: 'visitorConsentCollected', callback: (payload: { customerPrivacy: CustomerPrivacy }) => void): unknown;
  };
}

export interface Consent {
  marketing: boolean | null;
  analytics: boolean | null;
}
export interface WireEvent {
  id: string;
  name: string;
  timestamp: string;
  url?: string;
  data: { [key: string]: unknown };
}
export interface WireBatch {
  v: 1;
  key: string;
  client_id: string;
  consent: Consent;
  customer: { email: string } | null;
  events: WireEvent[];
}

const flag = (v: unknown): boolean | null => (typeof v === 'boolean' ? v : null);
const consentOf = (p: CustomerPrivacy | null | undefined): Consent => ({
  marketing: flag(p?.marketingAllowed),
  analytics: flag(p?.analyticsProcessingAllowed),
});
/** An email as given, trimmed; nothing that is not one. */
const utf8Bytes = (s: string): number => new TextEncoder().encode(s).length;
const emailOf = (v: unknown): string | null => (typeof v === 'string' && /^[^\s@]+@[^\s@]+$/.test(v.trim()) ? v.trim() : null);

function toWire(event: PixelEvent): WireEvent {
  const href = event.context?.document?.location?.href;
  const out = {
    id: String(event.id),
    name: event.name,
    timestamp: typeof event.timestamp === 'string' ? event.timestamp : new Date().toISOString(),
  } as WireEvent;
  if (typeof href === 'string' && href) out.url = href;
  out.data = trimEventData(event.data);
  return out;
}

/** Subscribes and starts batching; does nothing without a pixel key or an endpoint. */
export function startPixel(api: PixelApi, endpoint: string | null): void {
  const key = typeof api.settings.pixelKey === 'string' ? api.settings.pixelKey.trim() : '';
  if (!key || !endpoint) return;
  const target = endpoint;
  // only a logged-in customer's email is known up front; never one copied from event data
  const loggedInEmail = emailOf(api.init.data?.customer?.email);
  let consent = consentOf(api.init.customerPrivacy);
  let queue: WireEvent[] = [];
  let queueClientId = '';
  let timer: ReturnType<typeof setTimeout> | undefined;

  // The toml requires analytics and marketing consent; a visitor who withdraws either while the
  // pixel runs stops being collected. Unknown (null) is left to Shopify's pixel manager.
  const allowed = () => consent.analytics !== false && consent.marketing !== false;

  const post = (body: string, size: number): void => {
    const fallback = () =>
      fetch(target, {
        method: 'POST',
        body,
        keepalive: size <= MAX_BODY_BYTES,
        mode: 'no-cors',
        credentials: 'omit',
        headers: { 'content-type': 'text/plain;charset=UTF-8' },
      }).then(
        () => undefined,
        () => undefined, // best effort: a lost batch is not retried
      );
    let sent: Promise<boolean>;
    try {
      sent = Promise.resolve(api.browser.sendBeacon(target, body));
    } catch {
      sent = Promise.resolve(false);
    }
    sent.then(
      (ok) => (ok ? undefined : fallback()),
      () => fallback(),
    );
  };

  const send = (events: WireEvent[], clientId: string, email: string | null): void => {
    const batch: WireBatch = { v: 1, key, client_id: clientId, consent, customer: email ? { email } : null, events };
    const body = JSON.stringify(batch);
    const size = utf8Bytes(body);
    if (size > MAX_BODY_BYTES && events.length > 1) {
      const half = Math.ceil(events.length / 2);
      send(events.slice(0, half), clientId, email);
      send(events.slice(half), clientId, email);
      return;
    }
    post(body, size);
  };

  const flush = (contactEmail?: string | null): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (queue.length === 0) return;
    const events = queue;
    queue = [];
    for (let i = 0; i < events.length; i += MAX_EVENTS_PER_REQUEST) {
      send(events.slice(i, i + MAX_EVENTS_PER_REQUEST), queueClientId, contactEmail || loggedInEmail);
    }
  };

  const onEvent = (event: PixelEvent): void => {
    if (!allowed()) return;
    const clientId = typeof event.clientId === 'string' ? event.clientId : '';
    // A navigation sends what the previous page left queued; so does a change of client id, and
    // the contact step, so that the one batch carrying its email holds nothing else.
    if (event.name === 'page_viewed' || event.name === CONTACT_EVENT || clientId !== queueClientId) flush();
    queueClientId = clientId;
    queue.push(toWire(event));
    if (event.name === CONTACT_EVENT) {
      const checkout = (event.data as { checkout?: { email?: unknown } } | undefined)?.checkout;
      flush(emailOf(checkout?.email));
    } else if (SEND_NOW.indexOf(event.name) >= 0 || queue.length >= FLUSH_SIZE) {
      flush();
    } else if (timer === undefined) {
      timer = setTimeout(() => flush(), FLUSH_DELAY_MS);
    }
  };

  for (const name of SUBSCRIBED_EVENTS) api.analytics.subscribe(name, onEvent);
  api.customerPrivacy?.subscribe('visitorConsentCollected', (payload) => {
    consent = consentOf(payload?.customerPrivacy);
    if (!allowed()) {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      queue = []; // collected before the withdrawal, but not sent after it
    }
  });
}
