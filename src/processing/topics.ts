// Every topic stage 2 handles, and how: the one table. Adding a topic is a row here and its
// handler: a mapper in the event table (mapping/index.ts) for a forwarded topic, a side effect in
// the composition root (typed by SideEffectTopic, so a missing one does not compile), a case of
// the privacy and lifecycle use case, or the storefront stage. shopify.app.toml subscribes to the
// webhook topics of this table (test/unit/topics.test.ts).
import { EVENT_TABLE, type ForwardedTopic } from '../mapping';

export type Handling =
  /** Mapped to events for the email service (mapping/index.ts), in batches, in arrival order. */
  | 'forwarded'
  /** The compliance topics: each alone, in arrival order, in a transaction of its own. */
  | 'privacy'
  /** The app's own install state: alone and in order, as the privacy topics. */
  | 'lifecycle'
  /** No event: it updates what the app keeps (an import, the granted scopes, the product cache). */
  | 'side_effect'
  /** The web pixel's batches (stage 1 stored them as receipts of kind 'pixel'). */
  | 'storefront';

const FORWARDED = Object.fromEntries(Object.keys(EVENT_TABLE).map((t) => [t, 'forwarded'])) as Record<ForwardedTopic, 'forwarded'>;

export const TOPICS = {
  ...FORWARDED,
  'customers/redact': 'privacy',
  'customers/data_request': 'privacy',
  'shop/redact': 'privacy',
  'app/uninstalled': 'lifecycle',
  'bulk_operations/finish': 'side_effect',
  'app/scopes_update': 'side_effect',
  'products/update': 'side_effect',
  'products/delete': 'side_effect',
  'variants/in_stock': 'side_effect',
  'variants/out_of_stock': 'side_effect',
  'pixel/events': 'storefront',
  // the app's own receipt: a shop's storefront events due for another product lookup (storefront/retries.ts)
  'pixel/describe': 'storefront',
} as const satisfies Record<string, Handling>;

export type Topic = keyof typeof TOPICS;
type TopicsOf<H extends Handling> = { [T in Topic]: (typeof TOPICS)[T] extends H ? T : never }[Topic];
export type SideEffectTopic = TopicsOf<'side_effect'>;
export type PrivacyTopic = TopicsOf<'privacy' | 'lifecycle'>;

/**
 * How a receipt is handled. A storefront batch is known by its kind (the pixel route stored it);
 * a webhook by its topic, and one the table does not name is forwarded, which records it as
 * ignored ("topic not forwarded") with the shop's other receipts.
 */
export function handlingOf(topic: string, kind: string): Handling {
  if (kind === 'pixel') return 'storefront';
  const h = (TOPICS as Record<string, Handling | undefined>)[topic];
  return h === undefined || h === 'storefront' ? 'forwarded' : h;
}

/** Topics handled one at a time, alone in their unit (they change what the receipts after them may see). */
export function isSerial(topic: string, kind = 'webhook'): boolean {
  const h = handlingOf(topic, kind);
  return h === 'privacy' || h === 'lifecycle';
}
