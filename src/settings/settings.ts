// Per-shop settings: which events are forwarded, which contact properties are sent, the
// abandonment delay, the price-drop threshold, and the names of imported events. Validated once with zod at the edge.
import { z } from 'zod';

/** Every event of the contract's table, with its default. connector_test is always on. */
export const EVENT_DEFAULTS = {
  order_placed: true,
  order_paid: true,
  order_fulfilled: true,
  order_cancelled: true,
  order_refunded: true,
  checkout_started: true,
  checkout_abandoned: true,
  customer_created: true,
  customer_updated: true,
  email_subscribed: true,
  email_unsubscribed: true,
  email_changed: true,
  product_ordered: false,
  order_shipped: true,
  shipment_out_for_delivery: true,
  shipment_delivered: true,
  shipment_delivery_failed: true,
  // storefront events, from the web pixel (src/processing/storefront)
  viewed_product: true,
  added_to_cart: true,
  browse_abandoned: true,
  cart_abandoned: true,
  // stock and price news (src/processing/product-alerts): to notify-me subscribers and vouched
  // shoppers who viewed or carted the variant
  back_in_stock: true,
  price_dropped: true,
} as const;

export type EventName = keyof typeof EVENT_DEFAULTS;
export const EVENT_NAMES = Object.keys(EVENT_DEFAULTS) as EventName[];

/** Contact properties the service saves on the contact (top-level keys of send-event). */
export const CONTACT_PROPERTY_DEFAULTS = {
  first_name: true,
  last_name: true,
  phone: true,
  shopify_customer_id: true,
  email_marketing_state: true,
  accepts_marketing: true,
  tags: true,
  city: true,
  country_code: true,
  // from Shopify's purchasing-summary, consent and order topics, remembered per customer
  // (src/mapping/profile.ts); total_spent goes with its currency
  orders_count: true,
  total_spent: true,
  first_order_at: true,
  last_order_at: true,
  locale: true,
  sms_marketing_state: true,
  province_code: true,
} as const;

export type ContactProperty = keyof typeof CONTACT_PROPERTY_DEFAULTS;
export const CONTACT_PROPERTIES = Object.keys(CONTACT_PROPERTY_DEFAULTS) as ContactProperty[];

export interface Settings {
  events: Record<EventName, boolean>;
  contact_properties: Record<ContactProperty, boolean>;
  abandonment_delay_minutes: number;
  /** How far (percent) a variant's price must fall below the last known one for price_dropped. */
  price_drop_threshold_percent: number;
  /** Storefront: minutes after a shopper's last view (browse) or add to cart (cart) before its abandonment. */
  browse_abandonment_delay_minutes: number;
  cart_abandonment_delay_minutes: number;
  /** Storefront: events (views, adds) and abandonments sent per shopper's email and day, at most. */
  storefront_events_per_email_day: number;
  storefront_abandonments_per_email_day: number;
  import_event_names: { customer_imported: string; order_imported: string };
}

export const DEFAULT_SETTINGS: Settings = {
  events: { ...EVENT_DEFAULTS },
  contact_properties: { ...CONTACT_PROPERTY_DEFAULTS },
  abandonment_delay_minutes: 60,
  price_drop_threshold_percent: 10,
  browse_abandonment_delay_minutes: 60,
  cart_abandonment_delay_minutes: 60,
  storefront_events_per_email_day: 200,
  storefront_abandonments_per_email_day: 4,
  import_event_names: { customer_imported: 'customer_imported', order_imported: 'order_imported' },
};

/**
 * The range of each numeric setting, in whole units: the API refuses a value outside it, the page's
 * fields read it from the catalog, and a stored choice outside it is read as no choice.
 */
export const SETTING_LIMITS = {
  abandonment_delay_minutes: { min: 5, max: 7 * 24 * 60 },
  price_drop_threshold_percent: { min: 1, max: 90 },
  browse_abandonment_delay_minutes: { min: 5, max: 7 * 24 * 60 },
  cart_abandonment_delay_minutes: { min: 5, max: 7 * 24 * 60 },
  storefront_events_per_email_day: { min: 1, max: 10_000 },
  storefront_abandonments_per_email_day: { min: 1, max: 100 },
} as const;

/** A whole number within `r`. */
export const wholeIn = (r: { min: number; max: number }) => z.number().int().min(r.min).max(r.max);

const eventName = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'event names are lower snake_case, at most 64 characters');

/** What PUT /api/settings accepts: a partial update; unknown keys are refused. */
export const settingsPatchSchema = z
  .object({
    events: z
      .object(Object.fromEntries(EVENT_NAMES.map((n) => [n, z.boolean().optional()])))
      .strict()
      .optional(),
    contact_properties: z
      .object(Object.fromEntries(CONTACT_PROPERTIES.map((n) => [n, z.boolean().optional()])))
      .strict()
      .optional(),
    ...(Object.fromEntries(Object.entries(SETTING_LIMITS).map(([name, r]) => [name, wholeIn(r).optional()])) as {
      [K in keyof typeof SETTING_LIMITS]: z.ZodOptional<z.ZodNumber>;
    }),
    import_event_names: z.object({ customer_imported: eventName.optional(), order_imported: eventName.optional() }).strict().optional(),
  })
  .strict();

export type SettingsPatch = z.infer<typeof settingsPatchSchema>;

function defined<T extends object>(o: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * A patch over `base`: a setting the patch leaves out (or undefined) keeps its value, and the
 * groups (events, contact properties, import names) merge name by name. The one merge for full
 * settings (mergeSettings) and for a merchant's stored choices (mergeChoices).
 */
function mergePatch<T extends SettingsPatch>(base: T, patch: SettingsPatch): T {
  const merged = { ...base, ...defined(patch) } as Record<string, unknown>;
  for (const g of ['events', 'contact_properties', 'import_event_names'] as const) {
    if (base[g] || patch[g]) merged[g] = { ...defined(base[g]), ...defined(patch[g]) };
  }
  return merged as T;
}

/** Applies a patch (or a merchant's stored choices) over full settings. */
export function mergeSettings(base: Settings, patch: SettingsPatch): Settings {
  return mergePatch<Settings & SettingsPatch>(base, patch);
}

/**
 * The merchant's choices in a stored blob, read key by key: a key that no longer parses (renamed,
 * or outside a range that has since narrowed) is left out, and every other choice is kept. A blob
 * that is not JSON holds no choice.
 */
export function readStoredChoices(json: string | null | undefined): SettingsPatch {
  let raw: unknown;
  try {
    raw = json ? JSON.parse(json) : undefined;
  } catch {
    return {};
  }
  if (!raw || typeof raw !== 'object') return {};
  const choices: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(settingsPatchSchema.shape)) {
    const value = (raw as Record<string, unknown>)[key];
    if (value === undefined) continue;
    const whole = field.safeParse(value);
    if (whole.success) choices[key] = whole.data;
    else if (value && typeof value === 'object') choices[key] = readGroup(field, value as Record<string, unknown>);
  }
  return choices as SettingsPatch;
}

/** The readable entries of a group (events, contact properties, import names), each on its own. */
function readGroup(field: z.ZodType, value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([k, v]) => field.safeParse({ [k]: v }).success));
}

/** The merchant's earlier choices with a new patch over them: what is stored, so defaults stay the process's. */
export function mergeChoices(stored: SettingsPatch, patch: SettingsPatch): SettingsPatch {
  return mergePatch(stored, patch);
}

/**
 * A shop's settings: its merchant's stored choices over `defaults` (DEFAULT_SETTINGS, or the
 * process's: see Config.settingsDefaults). What the merchant has not chosen, or a stored choice
 * that is unreadable, takes the default.
 */
export function parseStoredSettings(json: string | null | undefined, defaults: Settings = DEFAULT_SETTINGS): Settings {
  return mergeSettings(defaults, readStoredChoices(json));
}
