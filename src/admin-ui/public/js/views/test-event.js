// "Send test event": queues a connector_test event through the whole pipeline and reports the
// delivery's result when it lands (polling GET /api/deliveries/:id).
import { watchDelivery } from '../api.js';
import { badge, busy, formatMs, h, render, setFieldError } from '../dom.js';

export function mountTestEvent(container, ctx) {
  const { api, bus } = ctx;
  const email = h('input', {
    id: 'test-email',
    name: 'email',
    type: 'email',
    class: 'input',
    autocomplete: 'email',
    placeholder: 'Optional: your email address',
    'aria-describedby': 'test-email-help test-email-error',
  });
  const error = h('p', { id: 'test-email-error', class: 'field-error', role: 'alert', hidden: true });
  const send = h('button', { class: 'button button--primary', type: 'submit', id: 'send-test-event' }, 'Send test event');
  // its own live region: progress and the final result are read out as they change
  const result = h('div', { id: 'test-event-result', class: 'test-result', role: 'status', 'aria-live': 'polite' });
  email.addEventListener('input', () => setFieldError(email, error, null));

  render(
    container,
    h(
      'form',
      { class: 'test-form', novalidate: true, onsubmit: onSend },
      h('label', { for: 'test-email', class: 'label' }, 'Test the connection'),
      h('div', { class: 'key-row' }, email, send),
      h(
        'p',
        { id: 'test-email-help', class: 'help' },
        'Sends a connector_test event to your account. Use your own address to find it there.',
      ),
      error,
      result,
    ),
  );

  function say(status, text) {
    render(result, status ? badge(status) : null, ' ', h('span', { class: 'test-result__text' }, text));
  }

  async function onSend(event) {
    event.preventDefault();
    const address = email.value.trim();
    if (address && !email.checkValidity()) {
      setFieldError(email, error, 'Enter an email address, or leave the field empty.');
      email.focus();
      return;
    }
    let id;
    await busy(send, async () => {
      say(null, 'Sending the test event…');
      try {
        id = (await api.testEvent(address || undefined)).delivery_id;
      } catch (err) {
        say('dead', err.code === 'not_connected' ? 'Connect an API key before sending a test event.' : err.message);
      }
    });
    if (!id) return;
    bus.emit('deliveries');
    result.dataset.deliveryId = id;
    say('queued', `Test event queued as delivery #${id}; waiting for the service…`);
    const final = await watchDelivery(api, id, {
      onUpdate: (d) => {
        if (d.status === 'delivering') say('delivering', `Delivering test event #${id}…`);
      },
    }).catch((err) => ({ status: 'error', last_error: err.message }));
    if (result.dataset.deliveryId !== id) return; // a newer test took over the message
    const tookMs = final?.delivered_at ? new Date(final.delivered_at) - new Date(final.created_at) : null;
    let text;
    if (final?.status === 'delivered')
      text = `Test event #${id} delivered${tookMs !== null ? ` in ${formatMs(Math.max(0, tookMs))}` : ''}.`;
    else if (final?.status === 'held') text = `Test event #${id} is held: the service refused the API key.`;
    else if (final?.status === 'dead') text = `Test event #${id} failed: ${final.last_error ?? 'the service refused it'}.`;
    else if (final?.status === 'error') text = `Could not follow test event #${id}: ${final.last_error}`;
    else
      text = `Test event #${id} is still ${final?.status ?? 'queued'}${final?.last_error ? ` (last error: ${final.last_error})` : ''}; it will be retried. Check the delivery log.`;
    say(final?.status === 'error' ? 'dead' : (final?.status ?? 'queued'), text);
    bus.emit('deliveries');
  }
}
