// Signed Shopify webhook deliveries: the HMAC over the raw body and every X-Shopify-* header.
import { createHmac, randomUUID } from 'node:crypto';

export interface WebhookOptions {
  /** e.g. `orders/create` */
  topic: string;
  shopDomain: string;
  /** An object (sent as JSON) or the raw body string, sent byte for byte. */
  payload: unknown;
  webhookId?: string;
  eventId?: string;
  triggeredAt?: string;
  /** Default 2026-10. */
  apiVersion?: string;
  /** Signing secret; defaults to the app's API secret. */
  secret?: string;
  /** Sends this HMAC instead of the right one (for invalid-HMAC tests); '' omits the header. */
  hmac?: string;
}

export interface SignedWebhook {
  headers: Record<string, string>;
  body: string;
}

export function signWebhook(defaultSecret: string, opts: WebhookOptions): SignedWebhook {
  const body = typeof opts.payload === 'string' ? opts.payload : JSON.stringify(opts.payload);
  const hmac =
    opts.hmac ??
    createHmac('sha256', opts.secret ?? defaultSecret)
      .update(body, 'utf8')
      .digest('base64');
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'X-Shopify-Topic': opts.topic,
    'X-Shopify-Shop-Domain': opts.shopDomain,
    'X-Shopify-API-Version': opts.apiVersion ?? '2026-10',
    'X-Shopify-Webhook-Id': opts.webhookId ?? randomUUID(),
    'X-Shopify-Triggered-At': opts.triggeredAt ?? new Date().toISOString(),
    'X-Shopify-Event-Id': opts.eventId ?? randomUUID(),
  };
  if (hmac !== '') headers['X-Shopify-Hmac-Sha256'] = hmac;
  return { headers, body };
}

/** POSTs a signed webhook. `appUrl` is the app's base URL (then `/webhooks`) or a full endpoint URL. */
export async function deliverWebhook(
  defaultSecret: string,
  appUrl: string,
  opts: WebhookOptions,
): Promise<{ status: number; body: unknown }> {
  const url = new URL(appUrl);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/webhooks';
  const signed = signWebhook(defaultSecret, opts);
  const res = await fetch(url, { method: 'POST', headers: signed.headers, body: signed.body });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : text;
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body };
}
