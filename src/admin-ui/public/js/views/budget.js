// Delivery budget card: the workspace's limit, and per delivery class what it sent in the last
// hour, what waits and since when, when that will be sent, what expired, and the floor share it
// keeps; with a banner when critical work waits or events expire, saying why and what helps.
// It refreshes with the activity card (the shared tick, Refresh, new deliveries) and hands each
// answer to the events card (bus 'budget') for the 7-day volumes.
// Its tiles and the four rows of its table are laid out at mount with placeholders, so the card
// keeps its height when the numbers arrive; only a warning, when there is one, adds its banner.
import { announce, formatDuration, h, render, renderBusy, skeleton, slot, statTile } from '../dom.js';

const CLASSES = [
  ['critical', 'Critical', 'orders, shipping, privacy, tests'],
  ['triggers', 'Triggers', 'checkouts, abandonment, customers'],
  ['behaviour', 'Behaviour', 'storefront views and carts, product lines'],
  ['history', 'History', 'the historical import'],
];
const COLUMNS = ['Class', 'Sent, last hour', 'Waiting', 'Oldest waiting', 'Sent within', 'Expired, 24 h', 'Floor'];

const CALM = 'Nothing waits for the budget: no critical event has waited over a minute, and nothing expired in the last 24 hours.';

const num = (n) => Number(n ?? 0).toLocaleString();
const plural = (n, one, many) => `${num(n)} ${n === 1 ? one : many}`;

/**
 * One banner for every warning: each says why, then what helps, once (every warning's message
 * ends with the same advice, after "What helps:").
 */
function banner(warnings) {
  const parts = warnings.map((w) => {
    const at = w.message.indexOf(HELPS);
    return { code: w.code, why: at < 0 ? w.message : w.message.slice(0, at).trim(), helps: at < 0 ? null : w.message.slice(at) };
  });
  const helps = parts.find((p) => p.helps)?.helps ?? null;
  return h(
    'div',
    { class: 'banner banner--warning' },
    parts.map((p) => h('p', { class: 'budget-warning', dataset: { warning: p.code } }, p.why)),
    helps ? h('p', { class: 'budget-warning budget-warning--helps' }, helps) : null,
  );
}

const HELPS = 'What helps:';

const percent = (part, whole) => {
  if (!whole || !part) return '0%';
  const p = (part / whole) * 100;
  return p < 1 ? '<1%' : `${Math.round(p)}%`;
};

/** The tiles, the status line and the table; `view` null: placeholders in every value. */
function layout(view) {
  const bar = (w = '3em') => skeleton(w);
  const known = view !== null;
  const classes = known ? new Map(view.classes.map((c) => [c.class, c])) : new Map();
  const waiting = known ? view.classes.reduce((a, c) => a + c.queued, 0) : 0;
  const scheduled = known ? view.classes.reduce((a, c) => a + c.scheduled, 0) : 0;
  const sent = known ? view.classes.reduce((a, c) => a + c.sent_1h, 0) : 0;
  const perHour = known ? view.limit_per_sec * 3600 : 0;

  const status = !known
    ? // the calm line's own words, unseen: the placeholder wraps exactly as the line will
      h('div', { class: 'budget-status' }, h('p', { class: 'budget-ok' }, h('span', { class: 'unseen', 'aria-hidden': 'true' }, CALM)))
    : view.warnings.length === 0
      ? h('div', { class: 'budget-status', id: 'budget-status' }, h('p', { class: 'budget-ok' }, CALM))
      : h('div', { class: 'budget-status', id: 'budget-status' }, banner(view.warnings));

  const tiles = h(
    'dl',
    { class: 'stats stats--budget' },
    statTile(
      'budget-limit',
      'Limit',
      known ? `${num(view.limit_per_sec)} a second` : bar('5em'),
      known ? `${num(perHour)} requests an hour` : bar('70%'),
    ),
    statTile('budget-sent', 'Sent, last hour', known ? num(sent) : bar(), known ? `${percent(sent, perHour)} of the limit` : bar('60%')),
    statTile('budget-waiting', 'Waiting now', known ? num(waiting) : bar(), known ? `${num(scheduled)} scheduled for later` : bar('70%')),
    statTile(
      'budget-shops',
      'Shared by',
      known ? plural(view.shops_in_workspace, 'shop', 'shops') : bar('4em'),
      known ? (view.shops_in_workspace > 1 ? 'of this workspace' : 'this store alone') : bar('60%'),
    ),
  );

  const cell = (value, cls) => h('td', { class: cls ?? 'num' }, known ? value : bar('2.5em'));
  // scrolls sideways on a phone: focusable, so the keyboard can scroll it too
  const table = h(
    'div',
    { class: 'log budget-table', tabindex: '0', role: 'region', 'aria-label': 'Delivery budget by class' },
    h(
      'table',
      { class: 'table', id: 'budget-classes', 'aria-busy': known ? null : 'true' },
      h('caption', { class: 'visually-hidden' }, 'The delivery budget by class, highest priority first'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          COLUMNS.map((c, i) => h('th', { scope: 'col', class: i === 0 ? null : 'num' }, c)),
        ),
      ),
      h(
        'tbody',
        {},
        CLASSES.map(([key, label, note]) => {
          const c = classes.get(key);
          return h(
            'tr',
            { dataset: { class: key } },
            h('th', { scope: 'row' }, h('span', { class: 'strong' }, label), h('span', { class: 'cell-note cell-note--text' }, note)),
            cell(c && num(c.sent_1h)),
            cell(c && num(c.queued)),
            cell(c && (c.queued > 0 ? formatDuration(c.oldest_queued_age_s) : '—')),
            cell(c && (c.queued > 0 ? `about ${formatDuration(c.drain_eta_s)}` : '—')),
            cell(c && (c.expired_24h > 0 ? h('span', { class: 'text-warning' }, num(c.expired_24h)) : '0')),
            cell(c && (key === 'critical' ? 'goes first' : `${Math.round(c.floor * 100)}%`)),
          );
        }),
      ),
    ),
  );

  return [
    status,
    tiles,
    table,
    h(
      'p',
      { class: 'help' },
      'Waiting: due now (an abandonment waiting out its delay, or a retry its backoff, is scheduled, not waiting). Sent within: an estimate; the classes above go first, and each class keeps its floor share of the requests while it has work waiting. Triggers and behaviour events still waiting a day after they were due expire unsent.',
    ),
  ];
}

export function mountBudget(card, ctx) {
  const { api, bus } = ctx;
  const body = slot(card);
  renderBusy(body, layout(null));

  let last = '';
  let inFlight = false;
  let warned = new Set();

  async function refresh() {
    if (inFlight) return;
    inFlight = true;
    try {
      const view = await api.budget();
      const json = JSON.stringify(view);
      if (json !== last) {
        render(body, layout(view));
        bus.emit('budget', view);
        // say a new warning once, not at every refresh of its numbers
        const codes = new Set(view.warnings.map((w) => w.code));
        const fresh = view.warnings.filter((w) => !warned.has(w.code));
        if (last !== '' && fresh.length) announce(`Delivery budget: ${fresh.map((w) => w.message.split(': ')[0]).join('; ')}.`);
        warned = codes;
      }
      last = json;
    } catch (err) {
      render(body, h('p', { class: 'text-critical', role: 'alert' }, `Could not load the delivery budget: ${err.message}`));
      last = '';
    } finally {
      inFlight = false;
    }
  }

  bus.on('tick', refresh);
  bus.on('refresh', refresh);
  bus.on('deliveries', refresh);
  bus.on('connection', refresh);
  return { refresh };
}
