// A list of on/off switches that save each change right away. Used by the Events and Contact
// properties cards. The latest change wins when saves overlap; a failed save reverts.
import { announce, h } from '../dom.js';

/**
 * @param {object} o
 * @param {string} o.idPrefix        e.g. 'event'
 * @param {string} o.legend          accessible name of the group
 * @param {Array<{name: string, label: string, hint?: Node|string, aside?: Node|string}>} o.items
 * @param {Record<string, boolean>} o.values
 * @param {(name: string, on: boolean) => Promise<Record<string, boolean>>} o.save  resolves with the saved values
 */
export function switchList({ idPrefix, legend, items, values, save }) {
  const inputs = new Map();
  const seq = new Map();

  const rows = items.map((item) => {
    const id = `${idPrefix}-${item.name}`;
    const state = h('span', { class: 'switch__state', id: `${id}-state`, 'aria-hidden': 'true' });
    const input = h('input', {
      id,
      type: 'checkbox',
      role: 'switch',
      class: 'switch__input',
      name: item.name,
      checked: Boolean(values[item.name]),
      'aria-describedby': item.hint ? `${id}-hint` : null,
      dataset: { name: item.name },
    });
    input.addEventListener('change', () => onChange(item, input, state));
    inputs.set(item.name, input);
    return h(
      'li',
      { class: 'switch-row' },
      h(
        'div',
        { class: 'switch-row__text' },
        h('label', { for: id, class: 'switch-row__label' }, item.label),
        item.hint ? h('p', { id: `${id}-hint`, class: 'help' }, item.hint) : null,
        item.aside !== undefined ? h('div', { class: 'switch-row__aside' }, item.aside) : null,
      ),
      h(
        'div',
        { class: 'switch-row__control' },
        state,
        h('span', { class: 'switch' }, input, h('span', { class: 'switch__track', 'aria-hidden': 'true' })),
      ),
    );
  });

  async function onChange(item, input, state) {
    const on = input.checked;
    const mine = (seq.get(item.name) ?? 0) + 1;
    seq.set(item.name, mine);
    state.textContent = 'Saving…';
    try {
      const saved = await save(item.name, on);
      if (seq.get(item.name) !== mine) return;
      input.checked = Boolean(saved[item.name]);
      state.textContent = 'Saved';
      announce(`${item.label} turned ${input.checked ? 'on' : 'off'}.`);
    } catch (err) {
      if (seq.get(item.name) !== mine) return;
      input.checked = !on;
      state.textContent = 'Not saved';
      announce(`${item.label} could not be changed: ${err.message}`);
    }
  }

  const element = h(
    'fieldset',
    { class: 'fieldset' },
    h('legend', { class: 'visually-hidden' }, legend),
    h('ul', { class: 'switch-list', role: 'list' }, rows),
  );

  return {
    element,
    /** Updates switches from saved values without touching one the merchant is changing. */
    set(next) {
      for (const [name, input] of inputs) if (name in next && document.activeElement !== input) input.checked = Boolean(next[name]);
    },
    rowAside(name) {
      return inputs.get(name)?.closest('.switch-row')?.querySelector('.switch-row__aside') ?? null;
    },
  };
}
