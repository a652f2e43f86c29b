// Mailing lists card: the account's lists, with clear not-connected, empty and error states.
import { h, render, slot } from '../dom.js';

export function mountLists(card, ctx) {
  const { api, bus } = ctx;
  const body = slot(card);

  async function refresh() {
    body.setAttribute('aria-busy', 'true');
    try {
      const { lists } = await api.lists();
      if (lists.length === 0) return render(body, h('p', { class: 'empty' }, 'Your account has no mailing lists yet.'));
      render(
        body,
        h(
          'table',
          { class: 'table' },
          h('caption', { class: 'visually-hidden' }, 'Mailing lists in your account'),
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'List'), h('th', { scope: 'col', class: 'num' }, 'Contacts'))),
          h(
            'tbody',
            {},
            lists.map((l) => {
              const count = l.raw && typeof l.raw === 'object' && typeof l.raw.contact_count === 'number' ? l.raw.contact_count : null;
              return h(
                'tr',
                {},
                h('td', {}, l.name ?? l.id ?? 'Unnamed list'),
                h('td', { class: 'num' }, count === null ? '—' : count.toLocaleString()),
              );
            }),
          ),
        ),
      );
    } catch (err) {
      if (err.code === 'not_connected' || err.code === 'invalid_key' || err.code === 'key_unreadable') {
        return render(body, h('p', { class: 'empty' }, 'Connect a valid API key to see your mailing lists.'));
      }
      render(
        body,
        h('p', { class: 'text-critical' }, `Could not load mailing lists: ${err.message} `),
        h('button', { class: 'button button--plain', type: 'button', onclick: refresh }, 'Try again'),
      );
    }
  }

  bus.on('connection', refresh);
  return { refresh };
}
