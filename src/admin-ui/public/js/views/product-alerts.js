// Back in stock and price drops card: the link that adds the notify-me block in Shopify's theme
// editor (in the sandbox, the simulated storefront's sold-out product, where the block shows), the
// week's back_in_stock and price_dropped messages, the subscriptions waiting per product and
// variant, the last restocks and price drops Shopify reported with how each ended, and the
// price-drop threshold (saved through PUT /api/settings).
// Everything is laid out at mount: the tiles with placeholders, and both tables in regions of a
// fixed height that scroll, so neither the number of rows nor an empty state moves the page.
import { announce, h, render, renderBusy, skeleton, slot, statTile, timeAgo } from '../dom.js';
import { numberSettingsForm } from './number-settings.js';

const EVENTS = [
  ['back_in_stock', 'Back in stock'],
  ['price_dropped', 'Price drops'],
];
const STATES = {
  pending: ['info', 'Waiting'],
  done: ['success', 'Done'],
  dropped: ['critical', 'Dropped'],
};
/** Every this many ticks of the page's shared clock (5 s): the card's numbers move slowly. */
const TICKS_PER_REFRESH = 12;

const num = (n) => Number(n ?? 0).toLocaleString();

function money(amount, currency) {
  if (amount === null || amount === undefined) return '';
  try {
    return currency ? new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount) : num(amount);
  } catch {
    return `${amount} ${currency}`;
  }
}

const productName = (r) => r.product_title ?? `Product ${r.product_id}`;
/** Shopify names the only variant of a product "Default Title": nothing worth showing. */
const variantName = (r) => (r.variant_title && r.variant_title !== 'Default Title' ? r.variant_title : null);

/** The tiles; `view` null: placeholders. `events` the event switches, to say when one is off. */
function tiles(view, events) {
  const known = view !== null;
  const t = view?.totals;
  return h(
    'dl',
    { class: 'stats alerts-stats' },
    statTile(
      'alerts-waiting',
      'Waiting subscribers',
      known ? num(t.waiting_subscribers) : skeleton('3em'),
      known ? `for ${num(t.waiting_variants)} ${t.waiting_variants === 1 ? 'variant' : 'variants'}` : skeleton('60%'),
    ),
    EVENTS.map(([name, label]) => {
      const e = t?.events[name];
      const note = !known
        ? skeleton('70%')
        : events[name] === false
          ? 'Off in the Events card'
          : `${num(e.delivered)} delivered \u00b7 ${num(e.waiting)} waiting`;
      return statTile(`alerts-${name}`, `${label}, ${t?.window_days ?? 7} days`, known ? num(e.queued) : skeleton('3em'), note);
    }),
  );
}

/** A table in a scrolling region of fixed height; focusable, so the keyboard scrolls it too. */
function region(id, label, content, busyNow) {
  return h(
    'div',
    { class: 'log alerts-log', id, tabindex: '0', role: 'region', 'aria-label': label, 'aria-busy': busyNow ? 'true' : null },
    content,
  );
}

const WAITING_COLUMNS = ['Product', 'Variant', 'Stock', 'Subscribers', 'Waiting since'];
const RECENT_COLUMNS = ['Reported', 'What', 'Product', 'Result', 'Messages'];

function head(columns, numeric) {
  return h(
    'thead',
    {},
    h(
      'tr',
      {},
      columns.map((c, i) => h('th', { scope: 'col', class: numeric.includes(i) ? 'num' : null }, c)),
    ),
  );
}

function placeholderRows(cells) {
  return h(
    'tbody',
    {},
    Array.from({ length: 3 }, () =>
      h(
        'tr',
        {},
        cells.map((w) => h('td', {}, skeleton(w))),
      ),
    ),
  );
}

function stock(available) {
  if (available === false) return h('span', { class: 'badge badge--warning' }, 'Sold out');
  if (available === true) return h('span', { class: 'badge badge--success' }, 'In stock');
  return h('span', { class: 'subdued' }, 'Unknown');
}

function waitingTable(view) {
  if (view === null)
    return h(
      'table',
      { class: 'table', 'aria-hidden': 'true' },
      head(WAITING_COLUMNS, [3]),
      placeholderRows(['9em', '4em', '4em', '2em', '5em']),
    );
  if (view.waiting.length === 0)
    return h(
      'p',
      { class: 'empty' },
      'No one is waiting for a restock. Shoppers subscribe with the “Notify me when available” block on a sold-out product’s page.',
    );
  return h(
    'table',
    { class: 'table', id: 'alerts-waiting-table' },
    h('caption', { class: 'visually-hidden' }, 'Subscriptions waiting for a restock, per variant, most subscribers first'),
    head(WAITING_COLUMNS, [3]),
    h(
      'tbody',
      {},
      view.waiting.map((w) =>
        h(
          'tr',
          { dataset: { variant: w.variant_id, product: w.product_id } },
          h('td', {}, h('span', { class: 'strong' }, productName(w))),
          h('td', {}, variantName(w) ?? h('span', { class: 'subdued' }, w.variant_title ? '—' : `Variant ${w.variant_id}`)),
          h('td', {}, stock(w.available)),
          h('td', { class: 'num' }, num(w.subscribers)),
          h('td', {}, timeAgo(w.since)),
        ),
      ),
    ),
  );
}

/** The signal's note, unless it only counts the messages (the Messages column does). */
const noteOf = (r) => (r.note && !/^\d+ message\(s\) queued$/.test(r.note) ? r.note : null);

function recentTable(view) {
  if (view === null)
    return h(
      'table',
      { class: 'table', 'aria-hidden': 'true' },
      head(RECENT_COLUMNS, [4]),
      placeholderRows(['5em', '6em', '9em', '10em', '2em']),
    );
  if (view.recent.length === 0)
    return h(
      'p',
      { class: 'empty' },
      'Nothing yet. A row appears when Shopify reports a sold-out variant back in stock, or a price cut by at least your threshold.',
    );
  return h(
    'table',
    { class: 'table', id: 'alerts-recent-table' },
    h('caption', { class: 'visually-hidden' }, 'The last restocks and price drops Shopify reported, newest first'),
    head(RECENT_COLUMNS, [4]),
    h(
      'tbody',
      {},
      view.recent.map((r) => {
        const [tone, label] = STATES[r.state] ?? ['neutral', r.state];
        const what = r.kind === 'price_drop' ? 'Price drop' : 'Back in stock';
        const prices =
          r.kind === 'price_drop' && r.price !== null
            ? `${money(r.previous_price, r.currency)} \u2192 ${money(r.price, r.currency)}`
            : null;
        return h(
          'tr',
          { dataset: { signal: r.id, kind: r.kind, state: r.state } },
          h('td', {}, timeAgo(r.created_at)),
          h('td', {}, h('span', { class: 'strong' }, what), prices ? h('span', { class: 'cell-note' }, prices) : null),
          h(
            'td',
            {},
            h('span', { class: 'strong' }, productName(r)),
            variantName(r) ? h('span', { class: 'cell-note cell-note--text' }, variantName(r)) : null,
          ),
          h(
            'td',
            { class: 'result' },
            h('span', { class: `badge badge--${tone}` }, label),
            noteOf(r) ? h('span', { class: 'cell-note cell-note--text' }, noteOf(r)) : null,
          ),
          h('td', { class: 'num' }, num(r.queued)),
        );
      }),
    ),
  );
}

export function mountProductAlerts(card, ctx) {
  const { api, bus, catalog, sandbox } = ctx;
  const body = slot(card);
  const limits = catalog.price_drop_threshold_percent;
  const preview = sandbox?.notify_me_preview ?? null;
  let events = { ...ctx.settings.events };
  let view = null;

  // the link's room is there from the start; its address comes with the first answer (or the sandbox's page)
  const link = h(
    'a',
    {
      id: 'add-notify-me-block',
      class: 'button button--primary',
      href: preview?.href ?? null,
      target: preview ? '_blank' : '_top',
      rel: preview ? 'noopener' : null,
      'aria-describedby': 'add-notify-me-block-help',
    },
    preview ? 'See the block on the sandbox storefront' : 'Add the notify-me block to your theme',
  );
  const linkHelp = h(
    'p',
    { class: 'help', id: 'add-notify-me-block-help' },
    preview
      ? `Sandbox: opens ${preview.label}, where the block shows. In your Shopify admin this button opens the theme editor with the block ready to add.`
      : 'Opens the theme editor on a product page with the “Notify me when available” block ready to add; save the theme to show it on sold-out products.',
  );

  const tilesBox = h('div', { class: 'alerts-tiles' }, tiles(null, events));
  const waiting = region('alerts-waiting-list', 'Subscriptions waiting for a restock', waitingTable(null), true);
  const recent = region('alerts-recent-list', 'Last restocks and price drops', recentTable(null), true);

  const thresholdForm = numberSettingsForm({
    formId: 'price-drop-form',
    fields: [
      {
        name: 'price_drop_threshold_percent',
        id: 'price-drop-threshold',
        label: 'Price drop threshold',
        unit: '%',
        help: `price_dropped goes out when a variant’s price falls by at least this share of its price before (${limits.min}\u2013${limits.max}%).`,
        limits,
      },
    ],
    values: ctx.settings,
    saveLabel: 'Save threshold',
    saveId: 'save-price-drop-threshold',
    save: (patch) => api.updateSettings(patch),
    savedMessage: (saved) => `Price drop threshold saved: ${saved.price_drop_threshold_percent}%.`,
  });

  renderBusy(
    body,
    h('div', { class: 'alerts-setup' }, link, linkHelp),
    tilesBox,
    h('h3', { class: 'subheading', id: 'alerts-waiting-title' }, 'Waiting for a restock'),
    waiting,
    h('p', { class: 'help' }, 'Subscriptions not yet told and not expired, per variant, most first (up to 50 variants).'),
    h('h3', { class: 'subheading', id: 'alerts-recent-title' }, 'Last restocks and price drops'),
    recent,
    h(
      'p',
      { class: 'help' },
      'Shopify’s reports of the last week, newest first. A restock sold out again before it was announced, or a report repeated, sends nothing.',
    ),
    thresholdForm.element,
  );

  function show() {
    render(tilesBox, tiles(view, events));
  }

  let last = '';
  let inFlight = false;
  async function refresh() {
    if (inFlight) return;
    inFlight = true;
    try {
      const next = await api.productAlerts();
      const json = JSON.stringify(next);
      if (json !== last) {
        view = next;
        if (!preview) {
          link.setAttribute('href', next.theme_editor_url);
        }
        show();
        render(waiting, waitingTable(next));
        render(recent, recentTable(next));
      }
      last = json;
      body.removeAttribute('aria-busy');
    } catch (err) {
      body.removeAttribute('aria-busy');
      waiting.removeAttribute('aria-busy');
      recent.removeAttribute('aria-busy');
      announce(`Could not load back in stock and price drops: ${err.message}`);
      if (last === '') {
        const failed = h('p', { class: 'text-critical' }, `Could not load: ${err.message}`);
        render(waiting, failed);
        render(recent, failed.cloneNode(true));
      }
    } finally {
      inFlight = false;
    }
  }

  let ticks = 0;
  bus.on('tick', () => {
    if (++ticks % TICKS_PER_REFRESH === 0) refresh();
  });
  bus.on('refresh', refresh);
  bus.on('connection', refresh);
  bus.on('settings', (settings) => {
    if (settings?.events) events = { ...settings.events };
    thresholdForm.set(settings);
    show();
  });
  return { refresh };
}
