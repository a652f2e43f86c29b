// Events card: one switch per event of the contract's table (with the Shopify topics it comes
// from), what each sent over the last 7 days with its share of the delivery budget (from the
// budget card's answer, one line per row that is there from the start), and the
// abandoned-checkout delay. A saved switch is told to the other cards (bus 'settings').
import { h, humanize, render, skeleton, slot } from '../dom.js';
import { numberSettingsForm } from './number-settings.js';
import { switchList } from './switches.js';

const DESCRIPTIONS = {
  order_placed: 'A customer places an order.',
  order_paid: 'An order is paid.',
  order_fulfilled: 'An order is fulfilled.',
  order_cancelled: 'An order is cancelled.',
  order_refunded: 'A refund is issued.',
  checkout_started: 'A customer starts a checkout with an email address.',
  checkout_abandoned: 'A checkout is left without an order for the delay below.',
  customer_created: 'A customer account is created.',
  customer_updated: 'A customer\u2019s details, tags, order count or consent change.',
  email_subscribed: 'A customer subscribes to email marketing.',
  email_unsubscribed: 'A customer unsubscribes from email marketing.',
  email_changed:
    'A customer changes their email address (sent to the new one, with the previous one, so workflows can merge the contacts).',
  product_ordered: 'One event per product in an order (for product-based flows).',
  order_shipped: 'An order ships with a tracking number (the event carries the tracking links).',
  shipment_out_for_delivery: 'The carrier has a shipment out for delivery.',
  shipment_delivered: 'The carrier delivers a shipment.',
  shipment_delivery_failed: 'The carrier could not deliver a shipment (a failed attempt or a failure).',
  viewed_product: 'A shopper views a product in your store (at most once per product and hour).',
  added_to_cart: 'A shopper adds a product to the cart.',
  browse_abandoned:
    'A shopper viewed products, then added nothing to the cart and started no checkout within the delay (60 minutes by default).',
  cart_abandoned: 'A shopper added to the cart, then started no checkout within the delay (60 minutes by default).',
  back_in_stock:
    'A sold-out variant is back: to the shoppers who asked with the notify-me form, and to known shoppers who viewed or carted it while sold out in the last 30 days.',
  price_dropped:
    'A variant\u2019s price falls by at least your threshold (Back in stock and price drops card): to known shoppers who viewed or carted it in the last 14 days and have not bought it since, once a week at most.',
};

export function mountEvents(card, ctx) {
  const { api, catalog } = ctx;
  const body = slot(card);
  const limits = catalog.abandonment_delay_minutes;

  const list = switchList({
    idPrefix: 'event',
    legend: 'Events sent to your account',
    values: ctx.settings.events,
    items: catalog.events.map((e) => ({
      name: e.name,
      label: humanize(e.name),
      hint: [DESCRIPTIONS[e.name] ?? '', ' ', h('span', { class: 'topics' }, `From ${e.topics.join(', ')}`)],
      aside: volumeLine(undefined),
    })),
    save: async (name, on) => {
      const saved = await api.updateSettings({ events: { [name]: on } });
      ctx.bus.emit('settings', saved);
      return saved.events;
    },
  });

  render(
    body,
    list.element,
    h('p', { class: 'help' }, 'The test event (connector_test) is always sent.'),
    numberSettingsForm({
      fields: [
        {
          name: 'abandonment_delay_minutes',
          id: 'abandonment-delay',
          label: 'Abandoned checkout delay',
          unit: 'minutes',
          help: `How long after a checkout's last activity it counts as abandoned, in minutes (${limits.min}\u2013${limits.max}).`,
          limits,
        },
      ],
      values: ctx.settings,
      saveLabel: 'Save delay',
      save: (patch) => api.updateSettings(patch),
      savedMessage: (saved) => `Abandoned checkout delay saved: ${saved.abandonment_delay_minutes} minutes.`,
    }).element,
    numberSettingsForm({
      formId: 'storefront-settings',
      title: 'Storefront events',
      fields: STOREFRONT_FIELDS.map((f) => ({
        ...f,
        id: `setting-${f.name}`,
        limits: catalog.storefront_settings[f.name],
        help: `${f.help} (${catalog.storefront_settings[f.name].min}\u2013${catalog.storefront_settings[f.name].max})`,
      })),
      values: ctx.settings,
      saveLabel: 'Save storefront settings',
      save: (patch) => api.updateSettings(patch),
      savedMessage: () => 'Storefront settings saved.',
    }).element,
  );

  ctx.bus.on('budget', (view) => {
    const byName = new Map(view.events_7d.map((e) => [e.event_name, e]));
    for (const e of catalog.events) {
      const aside = list.rowAside(e.name);
      if (aside) render(aside, volumeLine(byName.get(e.name) ?? null));
    }
  });

  return { set: (settings) => list.set(settings.events) };
}

const pct = (share) => (share > 0 && share < 0.01 ? '<1%' : `${Math.round(share * 100)}%`);

/**
 * One line: the event's sends over the last 7 days and its share of the workspace's sends, with
 * a bar of that share. `undefined`: not loaded yet; null: nothing sent.
 */
function volumeLine(e) {
  if (e === undefined)
    return h(
      'div',
      { class: 'volume' },
      h('p', { class: 'volume__text' }, skeleton('9em')),
      h('span', { class: 'volume__bar', 'aria-hidden': 'true' }),
    );
  const text =
    e === null || (e.sends === 0 && e.expired === 0)
      ? ['7 days: none sent']
      : [
          '7 days: ',
          h('strong', {}, e.sends.toLocaleString()),
          ' sent \u00b7 ',
          pct(e.share),
          h('span', { class: 'visually-hidden' }, ' of the delivery budget'),
          e.expired > 0 ? h('span', { class: 'text-warning' }, ` \u00b7 ${e.expired.toLocaleString()} expired`) : null,
        ];
  const share = e?.share ?? 0;
  return h(
    'div',
    { class: 'volume', dataset: { event: e?.event_name ?? '', share: String(share) } },
    h('p', { class: 'volume__text' }, text),
    h(
      'span',
      { class: 'volume__bar', 'aria-hidden': 'true' },
      h('span', { style: `width: ${Math.max(share > 0 ? 1 : 0, Math.round(share * 100))}%` }),
    ),
  );
}

/** The storefront's settings: the browse and cart abandonment delays and the per-email daily limits. */
const STOREFRONT_FIELDS = [
  {
    name: 'browse_abandonment_delay_minutes',
    label: 'Browse abandonment delay',
    unit: 'minutes',
    help: 'After a shopper\u2019s last product view, with nothing added to the cart.',
  },
  {
    name: 'cart_abandonment_delay_minutes',
    label: 'Cart abandonment delay',
    unit: 'minutes',
    help: 'After a shopper\u2019s last add to cart, with no checkout started.',
  },
  {
    name: 'storefront_events_per_email_day',
    label: 'Storefront events per shopper a day',
    unit: 'events',
    help: 'Views and adds to cart sent for one shopper\u2019s email in a day, at most.',
  },
  {
    name: 'storefront_abandonments_per_email_day',
    label: 'Abandonments per shopper a day',
    unit: 'events',
    help: 'Browse and cart abandonments sent for one shopper\u2019s email in a day, at most.',
  },
];
