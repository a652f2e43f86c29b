// Contact properties card: which customer properties are sent, with the account's custom
// fields beside them (a property whose key matches a custom field fills that field).
import { h, humanize, render, slot } from '../dom.js';
import { switchList } from './switches.js';

const LABELS = {
  shopify_customer_id: 'Shopify customer ID',
  email_marketing_state: 'Email marketing state',
  country_code: 'Country',
  orders_count: 'Number of orders',
  total_spent: 'Total spent (with its currency)',
  first_order_at: 'First order date',
  last_order_at: 'Last order date',
  locale: 'Language',
  sms_marketing_state: 'SMS marketing state',
  province_code: 'Province or state',
};

const NOT_CONNECTED = new Set(['not_connected', 'invalid_key', 'key_unreadable']);

export function mountProperties(card, ctx) {
  const { api, catalog, bus } = ctx;
  const body = slot(card);
  const fieldsBox = h('div', { class: 'custom-fields', 'aria-live': 'polite' });

  const list = switchList({
    idPrefix: 'property',
    legend: 'Contact properties sent with events',
    values: ctx.settings.contact_properties,
    items: catalog.contact_properties.map((p) => ({ name: p.name, label: LABELS[p.name] ?? humanize(p.name), aside: '' })),
    save: async (name, on) => (await api.updateSettings({ contact_properties: { [name]: on } })).contact_properties,
  });

  render(body, list.element, h('h3', { class: 'subheading', id: 'custom-fields-title' }, 'Custom fields in your account'), fieldsBox);

  function showMatches(fields) {
    const byKey = new Map(fields.filter((f) => f.key).map((f) => [f.key, f]));
    for (const p of catalog.contact_properties) {
      const aside = list.rowAside(p.name);
      if (!aside) continue;
      const f = byKey.get(p.name);
      render(
        aside,
        f
          ? h('span', { class: 'match' }, '\u2194 ', h('span', { class: 'visually-hidden' }, 'Fills the custom field '), f.label ?? f.key)
          : null,
      );
    }
  }

  async function refresh() {
    render(fieldsBox, h('p', { class: 'loading' }, 'Loading custom fields…'));
    fieldsBox.setAttribute('aria-busy', 'true');
    try {
      const { custom_fields: fields } = await api.customFields();
      showMatches(fields);
      if (fields.length === 0) return render(fieldsBox, h('p', { class: 'empty' }, 'Your account has no custom contact fields.'));
      render(
        fieldsBox,
        h(
          'ul',
          { class: 'chips', 'aria-labelledby': 'custom-fields-title' },
          fields.map((f) =>
            h(
              'li',
              { class: 'chip' },
              h('span', {}, f.label ?? f.key ?? 'Unnamed'),
              f.type ? h('span', { class: 'chip__meta' }, f.type) : null,
            ),
          ),
        ),
      );
    } catch (err) {
      showMatches([]);
      render(
        fieldsBox,
        NOT_CONNECTED.has(err.code)
          ? h('p', { class: 'empty' }, 'Connect a valid API key to see your account\u2019s custom fields.')
          : h('p', { class: 'text-critical' }, `Could not load custom fields: ${err.message}`),
      );
    }
  }

  bus.on('connection', refresh);
  return { refresh, set: (settings) => list.set(settings.contact_properties) };
}
