// A form of whole-number settings (the abandonment delays, the storefront's daily limits, the
// price-drop threshold). Only the fields the merchant changed are sent, together in one settings
// update, so a value left alone stays the shop's default; each changed field is checked against its
// range before anything is sent, and the field at fault gets the message and the focus.
import { announce, busy, h, setFieldError } from '../dom.js';

/**
 * @param {object} o
 * @param {string} [o.formId]
 * @param {string} [o.title]         a heading over several fields
 * @param {Array<{name: string, id: string, label: string, unit: string, help: string,
 *   limits: {min: number, max: number}}>} o.fields   `unit` is shown after the input, and named in
 *   the range error (e.g. 'minutes'; '%' as 'percent')
 * @param {Record<string, number>} o.values
 * @param {string} o.saveLabel
 * @param {string} [o.saveId]
 * @param {(patch: Record<string, number>) => Promise<Record<string, number>>} o.save  resolves with the saved settings
 * @param {(saved: Record<string, number>) => string} o.savedMessage
 * @returns {{element: HTMLFormElement, set: (settings: object) => void}}
 */
export function numberSettingsForm({ formId, title, fields, values, saveLabel, saveId, save, savedMessage }) {
  const save_ = h('button', { class: 'button', type: 'submit', id: saveId ?? null }, saveLabel);
  const single = fields.length === 1;
  const rows = fields.map((f) => {
    const input = h('input', {
      id: f.id,
      name: f.name,
      type: 'number',
      class: 'input input--narrow',
      inputmode: 'numeric',
      min: String(f.limits.min),
      max: String(f.limits.max),
      step: '1',
      value: String(values[f.name]),
      'aria-describedby': `${f.id}-help ${f.id}-error`,
    });
    const error = h('p', { id: `${f.id}-error`, class: 'field-error', role: 'alert', hidden: true });
    input.addEventListener('input', () => setFieldError(input, error, null));
    const box = h('span', { class: 'input-suffix' }, input, h('span', { 'aria-hidden': 'true' }, f.unit));
    const element = h(
      'div',
      { class: 'field' },
      h('label', { for: f.id, class: 'label' }, f.label),
      single ? h('div', { class: 'key-row' }, box, save_) : box,
      h('p', { id: `${f.id}-help`, class: 'help' }, f.help),
      error,
    );
    return { f, input, error, element };
  });

  const fail = (row, message) => {
    setFieldError(row.input, row.error, message);
    row.input.focus();
  };

  // the values last saved or loaded: a field that still shows its value is not the merchant's change
  const current = { ...values };

  async function onSave(event) {
    event.preventDefault();
    const patch = {};
    for (const row of rows) {
      if (row.input.value === String(current[row.f.name])) continue;
      const { min, max } = row.f.limits;
      const v = Number(row.input.value);
      if (row.input.value.trim() === '' || !Number.isInteger(v) || v < min || v > max) {
        const unit = row.f.unit === '%' ? 'percent' : row.f.unit;
        return fail(row, `Enter a whole number of ${unit} from ${min} to ${max}.`);
      }
      patch[row.f.name] = v;
    }
    if (Object.keys(patch).length === 0) return announce('Nothing to save: no value changed.');
    await busy(save_, async () => {
      try {
        const saved = await save(patch);
        for (const row of rows) {
          current[row.f.name] = saved[row.f.name];
          row.input.value = String(saved[row.f.name]);
        }
        announce(savedMessage(saved));
      } catch (err) {
        fail(rows[0], err.message);
      }
    });
  }

  const titleId = title && formId ? `${formId}-title` : null;
  const element = h(
    'form',
    { class: 'delay-form', id: formId ?? null, novalidate: true, onsubmit: onSave, 'aria-labelledby': titleId },
    title ? h('h3', { class: 'subheading', id: titleId }, title) : null,
    ...rows.map((r) => r.element),
    single ? null : h('div', { class: 'key-row' }, save_),
  );
  return {
    element,
    /** Settings saved elsewhere: shown in every field but the one being edited. */
    set(settings) {
      for (const row of rows) {
        if (settings?.[row.f.name] === undefined) continue;
        current[row.f.name] = settings[row.f.name];
        if (document.activeElement !== row.input) row.input.value = String(settings[row.f.name]);
      }
    },
  };
}
