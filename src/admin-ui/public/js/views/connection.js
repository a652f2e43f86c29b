// Connection card: status, workspace, key hint, last delivery and error; the key form with
// inline errors; Disconnect behind a confirmation dialog. The details take five one-line rows
// whether loading, connected or not (then a short how-to fills them), and Disconnect keeps its
// room when hidden, so the card keeps its height as it loads.
import { announce, badge, busy, h, render, renderBusy, setFieldError, skeleton, slot, timeAgo } from '../dom.js';

const DETAIL_TERMS = ['Workspace', 'API key', 'Connected', 'Last successful delivery', 'Last error'];

const REFUSED = 'This key was refused by the service. Check that you copied the whole key and that it has not been revoked.';

/** The sentence shown under the key field for a failed connect. */
export function connectErrorMessage(err) {
  if (err.status === 422 && err.code === 'invalid_key') return REFUSED;
  if (err.status === 400 && err.code === 'invalid_request') {
    const text = String(err.message).replace(/^api_key:\s*/, '');
    return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`.replace(/\.\.$/, '.');
  }
  if (err.status === 502 && err.code === 'service_unavailable') {
    return 'The email service could not be reached, so the key could not be checked. Nothing was changed; try again in a moment.';
  }
  return err.message;
}

export function mountConnection(card, ctx) {
  const { api, bus } = ctx;
  const body = slot(card);
  const badgeSlot = slot(card, 'badge');
  const dialog = document.getElementById('disconnect-dialog');
  let view = null;

  const details = h('div', { class: 'connection-details' });
  const input = h('input', {
    id: 'api-key',
    name: 'api_key',
    type: 'password',
    class: 'input',
    autocomplete: 'off',
    spellcheck: 'false',
    autocapitalize: 'off',
    'aria-describedby': 'api-key-help api-key-error',
  });
  const label = h('label', { for: 'api-key', class: 'label' }, 'API key');
  const help = h(
    'p',
    { id: 'api-key-help', class: 'help' },
    'Find it in your email marketing account under Settings → API keys. It is stored encrypted and never shown again.',
  );
  const error = h('p', { id: 'api-key-error', class: 'field-error', role: 'alert', hidden: true });
  const submit = h('button', { class: 'button button--primary', type: 'submit' }, 'Connect');
  const disconnect = h(
    'button',
    { class: 'button button--critical-plain', type: 'button', 'data-unavailable': '', onclick: confirmDisconnect },
    'Disconnect',
  );
  const form = h(
    'form',
    { class: 'key-form', novalidate: true, 'aria-label': 'API key', onsubmit: onSubmit },
    label,
    h('div', { class: 'key-row' }, input, submit),
    help,
    error,
  );
  input.addEventListener('input', () => setFieldError(input, error, null));

  render(body, details, form, h('div', { class: 'actions actions--end' }, disconnect));
  renderBusy(
    details,
    h(
      'dl',
      { class: 'details' },
      DETAIL_TERMS.map((term, i) => [h('dt', {}, term), h('dd', {}, skeleton(['40%', '15%', '20%', '20%', '30%'][i]))]),
    ),
  );

  function row(term, value) {
    return [h('dt', {}, term), h('dd', {}, value)];
  }

  function show(v) {
    view = v;
    render(badgeSlot, h('span', { id: 'connection-status' }, badge(v.status)));
    const connected = v.status !== 'disconnected';
    label.textContent = connected ? 'Replace the API key' : 'API key';
    submit.textContent = connected ? 'Replace key' : 'Connect';
    // out of sight and out of reach, but keeping its room: the card does not move when it comes back
    disconnect.toggleAttribute('data-unavailable', !connected);
    disconnect.disabled = !connected;
    if (!connected) {
      render(
        details,
        h('p', {}, 'Connect your email marketing account to start sending store events. Events that arrive before then are not sent.'),
        h(
          'ol',
          { class: 'steps' },
          h('li', {}, 'In your email marketing account, open Settings \u2192 API keys.'),
          h('li', {}, 'Generate a key for this store, and copy it.'),
          h('li', {}, 'Paste it below and choose Connect.'),
        ),
      );
      return;
    }
    render(
      details,
      v.status === 'invalid_key'
        ? h(
            'div',
            { class: 'banner banner--critical' },
            'The service refused the saved key. Deliveries are held, not lost: enter a valid key to resume them.',
          )
        : v.status === 'key_unreadable'
          ? h(
              'div',
              { class: 'banner banner--critical', id: 'key-unreadable' },
              'The app cannot read your saved API key: its server’s encryption key changed. Deliveries are held, not lost. ',
              'Paste your API key again below to resume them at once. (Operators: restart with the old key in ENCRYPTION_KEYS_PREVIOUS.)',
            )
          : null,
      // a configuration problem of the app (the service's address answers 404), not of the key
      v.delivery_problem
        ? h('div', { class: 'banner banner--critical', id: 'delivery-problem', role: 'alert' }, v.delivery_problem.message)
        : null,
      h(
        'dl',
        { class: 'details' },
        row(
          'Workspace',
          h('strong', { id: 'workspace-name', title: v.workspace_name ?? v.workspace_id ?? '' }, v.workspace_name ?? v.workspace_id ?? '—'),
        ),
        row('API key', h('code', { id: 'key-hint' }, v.key_hint ?? '—')),
        row('Connected', timeAgo(v.connected_at)),
        row('Last successful delivery', v.last_delivered_at ? timeAgo(v.last_delivered_at) : h('span', { class: 'subdued' }, 'None yet')),
        row(
          'Last error',
          v.last_error
            ? h('span', { class: 'text-critical' }, v.last_error, v.last_error_at ? [' \u00b7 ', timeAgo(v.last_error_at)] : null)
            : h('span', { class: 'subdued' }, 'None'),
        ),
      ),
    );
  }

  function showLoadError(err) {
    render(details, h('div', { class: 'banner banner--critical', role: 'alert' }, `Could not load the connection: ${err.message}`));
  }

  async function refresh() {
    try {
      const v = await api.connection();
      if (JSON.stringify(v) !== JSON.stringify(view)) show(v);
    } catch (err) {
      showLoadError(err);
    }
  }

  async function onSubmit(event) {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) {
      setFieldError(input, error, 'Enter the API key from your email marketing account.');
      input.focus();
      return;
    }
    await busy(submit, async () => {
      try {
        const v = await api.connect(key);
        input.value = '';
        setFieldError(input, error, null);
        show(v);
        announce(`Connected to ${v.workspace_name ?? 'your workspace'}.`);
        bus.emit('connection', v);
      } catch (err) {
        setFieldError(input, error, connectErrorMessage(err));
        input.focus();
      }
    });
  }

  function confirmDisconnect() {
    dialog.returnValue = '';
    dialog.addEventListener(
      'close',
      async () => {
        if (dialog.returnValue !== 'confirm') return;
        try {
          await api.disconnect();
          await refresh();
          announce('Disconnected. Events are no longer sent; queued deliveries are held.');
          input.focus();
          bus.emit('connection', view);
        } catch (err) {
          announce(`Could not disconnect: ${err.message}`);
        }
      },
      { once: true },
    );
    dialog.showModal();
  }

  bus.on('tick', (n) => {
    if (n % 3 === 0) refresh();
  });
  bus.on('deliveries', refresh);
  return { refresh, current: () => view };
}
