// Tiny DOM helpers shared by the views: element builder, announcer, formatters, badges.

/**
 * h('button', { class: 'button', onclick: fn, 'aria-label': 'x' }, 'Text', childNode)
 * Props starting with "on" become listeners; `false`/`null` props are skipped; children may be
 * strings, nodes, arrays or null.
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === false || value === null || value === undefined) continue;
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key in el && typeof value !== 'string') el[key] = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces a container's content. */
export function render(container, ...children) {
  container.replaceChildren();
  append(container, children);
  container.removeAttribute('aria-busy');
}

/** Like render, for placeholders: the container stays aria-busy until its real content comes. */
export function renderBusy(container, ...children) {
  render(container, ...children);
  container.setAttribute('aria-busy', 'true');
}

/** A grey bar standing for a value not loaded yet, one line high; hidden from assistive technology. */
export function skeleton(width = '60%') {
  return h('span', { class: 'skeleton', style: `width: ${width}`, 'aria-hidden': 'true' });
}

/** The body slot of a card section. */
export const slot = (card, name = 'body') => card.querySelector(`[data-slot="${name}"]`);

/** Says `message` in the page's polite live region (re-announces a repeated message too). */
export function announce(message) {
  const live = document.getElementById('live');
  if (!live) return;
  live.textContent = '';
  setTimeout(() => {
    live.textContent = message;
  }, 30);
}

let ids = 0;
export const uid = (prefix) => `${prefix}-${++ids}`;

/** order_placed → "Order placed" */
export function humanize(name) {
  const s = String(name).replace(/_/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
const dtf = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** A <time> showing "5 minutes ago", with the exact date in its title. */
export function timeAgo(iso) {
  if (!iso) return h('span', { class: 'subdued' }, '—');
  const d = new Date(iso);
  const s = Math.round((d.getTime() - Date.now()) / 1000);
  const abs = Math.abs(s);
  const [value, unit] =
    abs < 45
      ? [s, 'second']
      : abs < 2700
        ? [Math.round(s / 60), 'minute']
        : abs < 79200
          ? [Math.round(s / 3600), 'hour']
          : [Math.round(s / 86400), 'day'];
  const text = abs < 10 ? 'just now' : rtf.format(value, unit);
  return h('time', { datetime: d.toISOString(), title: dtf.format(d) }, text);
}

/** 45 → "45 s", 200 → "3 min", 7500 → "2 h 5 min". */
export function formatDuration(s) {
  if (s === null || s === undefined) return '—';
  if (s < 90) return `${Math.max(0, Math.round(s))} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  const hours = Math.floor(s / 3600);
  const min = Math.round((s - hours * 3600) / 60);
  return min ? `${hours} h ${min} min` : `${hours} h`;
}

export function formatMs(ms) {
  if (ms === null || ms === undefined) return '—';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}

const TONES = {
  connected: 'success',
  delivered: 'success',
  invalid_key: 'critical',
  key_unreadable: 'critical',
  dead: 'critical',
  held: 'warning',
  queued: 'info',
  delivering: 'info',
  disconnected: 'neutral',
  cancelled: 'neutral',
};
const LABELS = { invalid_key: 'Invalid key', key_unreadable: 'Key unreadable', disconnected: 'Not connected' };

export function badge(status, label = LABELS[status] ?? humanize(status)) {
  return h('span', { class: `badge badge--${TONES[status] ?? 'neutral'}`, dataset: { status } }, label);
}

/** A busy button: disabled with a spinner while `work` runs. Returns work's result. */
export async function busy(button, work) {
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    return await work();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

/** An inline error under a field, wired with aria-describedby / aria-invalid. */
export function setFieldError(input, errorEl, message) {
  errorEl.textContent = message ?? '';
  errorEl.hidden = !message;
  if (message) input.setAttribute('aria-invalid', 'true');
  else input.removeAttribute('aria-invalid');
}

/** A figure of a card's tiles: its label, its value, a note under it if given, and a tone. */
export function statTile(id, label, value, note = null, tone = null) {
  return h(
    'div',
    { class: `stat${tone ? ` stat--${tone}` : ''}`, id },
    h('dt', { class: 'stat__label' }, label),
    h('dd', { class: 'stat__value' }, value),
    note === null || note === undefined ? null : h('dd', { class: 'stat__note' }, note),
  );
}
