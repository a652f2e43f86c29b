// Sandbox only: buttons that make the simulated shop send a signed sample webhook, so the whole
// pipeline can be watched from this page without a real store.
import { busy, h, render, slot } from '../dom.js';

export function mountSimulate(card, ctx) {
  const { bus, sandbox, shop } = ctx;
  const result = h('p', { id: 'simulate-result', class: 'help', role: 'status' }, 'Nothing sent yet.');

  async function send(topic, button) {
    await busy(button, async () => {
      let text;
      try {
        const res = await fetch('/_dev/simulate', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ topic, shop }),
        });
        const data = await res.json().catch(() => null);
        text = res.ok
          ? `Sent a ${topic} webhook; the app answered ${data?.webhook_status ?? 'OK'}.`
          : `The ${topic} webhook was not sent: ${data?.error?.message ?? `HTTP ${res.status}`}`;
      } catch {
        text = `The ${topic} webhook was not sent: the app could not be reached.`;
      }
      result.textContent = text; // a status region: read out without a separate announcement
      bus.emit('deliveries');
    });
  }

  render(
    slot(card),
    h('p', { class: 'subdued' }, `Send a sample webhook from the simulated shop ${shop} to this app.`),
    h(
      'div',
      { class: 'button-group', role: 'group', 'aria-label': 'Simulate a webhook' },
      sandbox.simulate_topics.map((topic) => {
        const b = h('button', { class: 'button', type: 'button', dataset: { topic }, onclick: () => send(topic, b) }, topic);
        return b;
      }),
    ),
    result,
    sandbox.links.length
      ? h(
          'ul',
          { class: 'links' },
          sandbox.links.map((l) => h('li', {}, h('a', { href: l.href, target: '_blank', rel: 'noopener' }, l.label))),
        )
      : null,
  );
  card.hidden = false;
}
