// The delivery log: newest first, a status filter, cursor paging (Newer / Older), and Retry for
// dead, held or unconfirmed deliveries. Re-renders keep keyboard focus on the same control when it survives.
import { watchDelivery } from '../api.js';
import { announce, badge, busy, h, humanize, render, skeleton, timeAgo } from '../dom.js';

const PAGE_SIZE = 10;
const RETRYABLE = new Set(['dead', 'held', 'delivered_unconfirmed', 'expired']);
const HELD_REASONS = {
  invalid_key: 'the API key is invalid',
  disconnected: 'the account is disconnected',
  key_unreadable: 'the saved API key cannot be read on the server',
  uninstalled: 'the app is uninstalled',
  service_not_found: 'the email service’s address answers 404 (the app’s setup, see above)',
};

export function mountDeliveries(container, ctx) {
  const { api, bus, catalog } = ctx;
  const state = { status: '', cursors: [], page: null };

  const filter = h(
    'select',
    {
      id: 'delivery-status',
      class: 'select',
      onchange: () => {
        state.status = filter.value;
        state.cursors = [];
        load();
      },
    },
    h('option', { value: '' }, 'All statuses'),
    catalog.delivery_statuses.map((st) => h('option', { value: st }, humanize(st))),
  );
  const newer = h(
    'button',
    {
      class: 'button',
      type: 'button',
      onclick: () => {
        state.cursors.pop();
        load();
      },
    },
    '\u2190 Newer',
  );
  const older = h(
    'button',
    {
      class: 'button',
      type: 'button',
      onclick: () => {
        state.cursors.push(state.page.next_cursor);
        load();
      },
    },
    'Older \u2192',
  );
  const pageInfo = h('span', { class: 'subdued', 'aria-live': 'polite' });
  const COLUMNS = ['ID', 'Event', 'Status', 'Attempts', 'Created', 'Result', 'Action'];
  const head = () =>
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        COLUMNS.map((c, i) =>
          h('th', { scope: 'col', class: i === 3 ? 'num' : null }, i === 6 ? h('span', { class: 'visually-hidden' }, c) : c),
        ),
      ),
    );
  // a page of placeholder rows, each as tall as a loaded one (two lines in the event cell)
  // scrolls sideways on a phone: focusable, so the keyboard can scroll it too
  const table = h(
    'div',
    { class: 'log', id: 'delivery-log', 'aria-busy': 'true', tabindex: '0', role: 'region', 'aria-labelledby': 'delivery-log-title' },
    h(
      'table',
      { class: 'table', 'aria-hidden': 'true' },
      head(),
      h(
        'tbody',
        {},
        Array.from({ length: PAGE_SIZE }, () =>
          h(
            'tr',
            {},
            h('td', { class: 'mono' }, skeleton('2em')),
            h('td', {}, h('span', { class: 'strong' }, skeleton('8em')), h('span', { class: 'cell-note' }, skeleton('6em'))),
            h('td', {}, skeleton('5em')),
            h('td', { class: 'num' }, skeleton('1em')),
            h('td', {}, skeleton('4em')),
            h('td', { class: 'result' }, skeleton('8em')),
            h('td', { class: 'actions-cell' }),
          ),
        ),
      ),
    ),
  );
  const heading = h('h3', { class: 'subheading', id: 'delivery-log-title', tabindex: '-1' }, 'Delivery log');

  render(
    container,
    h(
      'div',
      { class: 'log-header' },
      heading,
      h('div', { class: 'inline-field' }, h('label', { for: 'delivery-status', class: 'label' }, 'Status'), filter),
    ),
    table,
    h('nav', { class: 'pager', 'aria-label': 'Delivery log pages' }, newer, pageInfo, older),
  );

  function resultCell(d) {
    if (d.status === 'delivered') return ['Delivered ', timeAgo(d.delivered_at)];
    if (d.status === 'held')
      return h('span', { class: 'text-warning' }, `Held: ${HELD_REASONS[d.held_reason] ?? d.held_reason ?? 'waiting on you'}`);
    if (d.last_error)
      return h(
        'span',
        { class: d.status === 'dead' ? 'text-critical' : d.status === 'delivered_unconfirmed' ? 'text-warning' : 'subdued' },
        d.last_error,
      );
    if (d.status === 'queued' && new Date(d.run_at) > new Date()) return ['Scheduled ', timeAgo(d.run_at)];
    return h('span', { class: 'subdued' }, '—');
  }

  function row(d) {
    const name = humanize(d.event_name);
    const retry = RETRYABLE.has(d.status)
      ? h(
          'button',
          {
            class: 'button button--small',
            type: 'button',
            'aria-label': `Retry delivery ${d.id}, ${name}`,
            dataset: { focusKey: `retry-${d.id}` },
            onclick: (e) => onRetry(d, e.currentTarget),
          },
          'Retry',
        )
      : null;
    return h(
      'tr',
      { dataset: { id: d.id, status: d.status, event: d.event_name } },
      h('td', { class: 'mono' }, `#${d.id}`),
      h('td', {}, h('span', { class: 'strong' }, name), h('span', { class: 'cell-note' }, d.topic)),
      h('td', {}, badge(d.status)),
      h('td', { class: 'num' }, d.attempts),
      h('td', {}, timeAgo(d.created_at)),
      h('td', { class: 'result' }, resultCell(d)),
      h('td', { class: 'actions-cell' }, retry),
    );
  }

  function show(page) {
    const focusKey = table.contains(document.activeElement) ? document.activeElement.dataset.focusKey : undefined;
    state.page = page;
    newer.disabled = state.cursors.length === 0;
    older.disabled = !page.next_cursor;
    pageInfo.textContent = `Page ${state.cursors.length + 1}`;
    if (page.deliveries.length === 0) {
      render(
        table,
        h(
          'p',
          { class: 'empty' },
          state.status
            ? `No ${humanize(state.status).toLowerCase()} deliveries.`
            : 'No deliveries yet. Send a test event to check the connection, or wait for store activity.',
        ),
      );
    } else {
      render(
        table,
        h(
          'table',
          { class: 'table' },
          h('caption', { class: 'visually-hidden' }, `Deliveries, newest first${state.status ? `, status ${state.status}` : ''}`),
          head(),
          h('tbody', {}, page.deliveries.map(row)),
        ),
      );
    }
    if (focusKey) (table.querySelector(`[data-focus-key="${focusKey}"]`) ?? heading).focus();
  }

  let lastJson = '';
  let seq = 0;
  let inFlight = 0;
  /** The latest request wins; quiet (background) loads are skipped while one is in flight. */
  async function load({ quiet = false } = {}) {
    if (quiet && inFlight > 0) return;
    const mine = ++seq;
    inFlight += 1;
    if (!quiet) table.setAttribute('aria-busy', 'true');
    try {
      const page = await api.deliveries({ status: state.status, cursor: state.cursors.at(-1), limit: PAGE_SIZE });
      if (mine !== seq) return;
      const json = JSON.stringify([state.status, state.cursors, page]);
      if (json !== lastJson || !quiet) show(page);
      lastJson = json;
    } catch (err) {
      if (mine === seq) render(table, h('p', { class: 'text-critical', role: 'alert' }, `Could not load deliveries: ${err.message}`));
    } finally {
      inFlight -= 1;
      if (mine === seq) table.removeAttribute('aria-busy');
    }
  }

  async function onRetry(d, button) {
    const name = humanize(d.event_name);
    await busy(button, async () => {
      try {
        await api.retry(d.id);
      } catch (err) {
        announce(`Delivery ${d.id} could not be retried: ${err.message}`);
        return;
      }
      announce(`Delivery ${d.id} (${name}) queued again.`);
      bus.emit('deliveries');
    });
    const final = await watchDelivery(api, d.id, { onUpdate: () => load({ quiet: true }) }).catch(() => null);
    if (final?.status === 'delivered') announce(`Delivery ${d.id} (${name}) delivered.`);
    else if (final) announce(`Delivery ${d.id} (${name}) is ${final.status}${final.last_error ? `: ${final.last_error}` : ''}.`);
    bus.emit('deliveries');
  }

  // Auto-refresh only the first page: moving rows under someone reading older pages is unkind.
  bus.on('tick', () => {
    if (state.cursors.length === 0) load({ quiet: true });
  });
  bus.on('deliveries', () => {
    if (state.cursors.length === 0) load({ quiet: true });
  });
  bus.on('connection', () => load({ quiet: true }));
  return { refresh: () => load({ quiet: true }), load };
}
