// Historical import card: offered right after the first successful connect, then a progress bar
// with the remaining time (rows left ÷ the workspace's rate), and cancel. The card's body keeps
// the offer's height from the start (a min-height in app.css), whatever it shows.
import { announce, h, render, renderBusy, slot } from '../dom.js';

const RUNNING = new Set(['pending', 'running']);

function eta(seconds) {
  if (seconds === null || seconds === undefined) return 'estimating…';
  if (seconds < 90) return `about ${Math.max(1, Math.round(seconds))} s left`;
  if (seconds < 5400) return `about ${Math.round(seconds / 60)} min left`;
  return `about ${(seconds / 3600).toFixed(1)} h left`;
}

export function mountImport(card, ctx) {
  const { api, bus } = ctx;
  const body = slot(card);
  /** null until known: the first refresh asks the server. */
  let connected = null;

  /** The offer; `placeholder`: the same form, inert, standing in while the state loads. */
  function offer(status, { placeholder = false } = {}) {
    const since = h(
      'select',
      { id: 'import-since' },
      h('option', { value: '365' }, 'Orders of the last 12 months'),
      h('option', { value: '90' }, 'Orders of the last 90 days'),
      h('option', { value: 'all' }, 'All orders'),
    );
    const customers = h('input', { type: 'checkbox', id: 'import-customers', checked: true });
    const orders = h('input', { type: 'checkbox', id: 'import-orders', checked: true });
    const error = h('p', { class: 'text-critical', role: 'alert', hidden: true });
    const start = h('button', { class: 'button button--primary', type: 'submit' }, 'Start import');
    const form = h(
      'form',
      {
        class: 'import-form',
        inert: placeholder,
        onsubmit: async (e) => {
          e.preventDefault();
          const kinds = [customers.checked && 'customers', orders.checked && 'orders'].filter(Boolean);
          if (kinds.length === 0) return Object.assign(error, { hidden: false, textContent: 'Choose customers, orders, or both.' });
          const sinceValue = since.value === 'all' ? 'all' : new Date(Date.now() - Number(since.value) * 86_400_000).toISOString();
          start.setAttribute('aria-busy', 'true');
          try {
            await api.startBackfill({ kinds, since: sinceValue });
            announce('Import started.');
            await refresh();
          } catch (err) {
            Object.assign(error, { hidden: false, textContent: err.message });
          } finally {
            start.removeAttribute('aria-busy');
          }
        },
      },
      h(
        'fieldset',
        {},
        h('legend', { class: 'visually-hidden' }, 'What to import'),
        h('label', {}, customers, ' Customers'),
        h('label', {}, orders, ' Orders'),
      ),
      h('label', { for: 'import-since' }, 'Since '),
      since,
      start,
    );
    const last =
      status.state === 'completed'
        ? h(
            'p',
            { class: 'subdued' },
            `Last import finished ${new Date(status.finished_at).toLocaleString()}: ${status.queued.toLocaleString()} events queued, ${status.delivered.toLocaleString()} delivered.`,
          )
        : status.state === 'failed'
          ? h('p', { class: 'text-critical' }, `The last import failed: ${status.error}`)
          : status.state === 'cancelled'
            ? h('p', { class: 'subdued' }, 'The last import was cancelled.')
            : null;
    (placeholder ? renderBusy : render)(body, last, form, error);
  }
  offer({ state: 'none' }, { placeholder: true });

  function progress(status) {
    const total = status.total ?? null;
    const done = status.delivered ?? 0;
    const planned = Math.max(total ?? 0, status.queued ?? 0);
    const pct = planned > 0 ? Math.min(100, Math.round((done / planned) * 100)) : 0;
    render(
      body,
      h(
        'p',
        {},
        status.state === 'pending'
          ? 'Asking Shopify for your store’s history…'
          : `Importing ${status.kinds.join(' and ')}: ${done.toLocaleString()} of ${planned ? planned.toLocaleString() : '…'} sent, ${eta(status.eta_s)}.`,
      ),
      h(
        'div',
        {
          class: 'progress',
          role: 'progressbar',
          'aria-label': 'Import progress',
          'aria-valuemin': '0',
          'aria-valuemax': '100',
          'aria-valuenow': String(pct),
        },
        h('div', { class: 'progress__bar', style: `width: ${pct}%` }),
      ),
      h('p', { class: 'subdued' }, `Read ${(status.processed ?? 0).toLocaleString()} rows from Shopify. Live events always go first.`),
      h(
        'button',
        {
          class: 'button',
          type: 'button',
          onclick: async () => {
            await api.cancelBackfill().catch((err) => announce(`Could not cancel: ${err.message}`));
            announce('Import cancelled.');
            await refresh();
          },
        },
        'Cancel import',
      ),
    );
  }

  async function refresh() {
    if (connected === null)
      connected = await api.connection().then(
        (c) => c.status === 'connected',
        () => false,
      );
    if (!connected) {
      body.removeAttribute('aria-busy');
      return render(body, h('p', { class: 'empty' }, 'Connect an API key first; then you can import your existing customers and orders.'));
    }
    try {
      const status = await api.backfill();
      body.removeAttribute('aria-busy');
      if (RUNNING.has(status.state) || (status.state === 'completed' && status.delivered < status.queued)) progress(status);
      else offer(status);
    } catch (err) {
      render(body, h('p', { class: 'text-critical' }, `Could not load the import: ${err.message}`));
    }
  }

  bus.on('connection', (view) => {
    connected = view?.status === 'connected';
    refresh();
  });
  bus.on('tick', () => {
    if (connected && body.querySelector('[role="progressbar"]')) refresh();
  });
  return { refresh };
}
