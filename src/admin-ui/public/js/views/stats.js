// Activity stats: queue and outcome counts, latency percentiles, and deliveries per hour over
// the last 24 hours as a small inline SVG bar chart (with a text alternative). Before the first
// answer the same tiles and chart are laid out with placeholders (renderStatsPlaceholder).
import { formatMs, h, render, renderBusy, skeleton, statTile } from '../dom.js';

const SVG = 'http://www.w3.org/2000/svg';
function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) if (c !== '') el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

const hourFmt = new Intl.DateTimeFormat(undefined, { hour: 'numeric' });

/** Bars for stats.hourly: [{hour: ISO, delivered: n}] × 24, oldest first; null: not loaded yet (an empty frame). */
export function hourlyChart(hourly) {
  if (hourly === null) {
    const W = 960,
      H = 140;
    return h(
      'figure',
      { class: 'chart-figure' },
      s(
        'svg',
        { viewBox: `0 0 ${W} ${H}`, class: 'chart', 'aria-hidden': 'true' },
        s('line', { x1: 4, x2: W - 4, y1: H - 21.5, y2: H - 21.5, class: 'chart__axis' }),
      ),
      h('figcaption', { class: 'help' }, skeleton('50%')),
    );
  }
  const W = 960,
    H = 140,
    top = 14,
    bottom = 22,
    left = 4,
    right = 4;
  const values = hourly.map((x) => x.delivered);
  const max = Math.max(1, ...values);
  const total = values.reduce((a, b) => a + b, 0);
  const peakAt = values.indexOf(Math.max(...values));
  const slot = (W - left - right) / Math.max(1, hourly.length);
  const plotH = H - top - bottom;
  const summary =
    total === 0
      ? 'No deliveries in the last 24 hours.'
      : `${total} ${total === 1 ? 'delivery' : 'deliveries'} in the last 24 hours; the busiest hour, starting ${hourFmt.format(new Date(hourly[peakAt].hour))}, had ${values[peakAt]}.`;

  const svg = s(
    'svg',
    { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-labelledby': 'chart-title chart-desc' },
    s('title', { id: 'chart-title' }, 'Deliveries per hour, last 24 hours'),
    s('desc', { id: 'chart-desc' }, summary),
    s('line', { x1: left, x2: W - right, y1: top + plotH + 0.5, y2: top + plotH + 0.5, class: 'chart__axis' }),
    total > 0 ? s('text', { x: W - right, y: 10, 'text-anchor': 'end', class: 'chart__label' }, `max ${max} per hour`) : '',
  );
  hourly.forEach((x, i) => {
    const hgt = x.delivered === 0 ? 0 : Math.max(2, (x.delivered / max) * plotH);
    const bar = s(
      'rect',
      { x: left + i * slot + 2, y: top + plotH - hgt, width: Math.max(1, slot - 4), height: hgt, rx: 2, class: 'chart__bar' },
      s('title', {}, `${hourFmt.format(new Date(x.hour))}: ${x.delivered} delivered`),
    );
    svg.append(bar);
    if (i % 6 === 0)
      svg.append(
        s(
          'text',
          { x: left + i * slot + slot / 2, y: H - 6, 'text-anchor': 'middle', class: 'chart__label' },
          hourFmt.format(new Date(x.hour)),
        ),
      );
  });
  return h('figure', { class: 'chart-figure' }, svg, h('figcaption', { class: 'help' }, summary));
}

/** Webhooks stored but not processed yet: worth a word only once they have waited a while. */
export const LAG_NOTICE_AFTER_S = 5;

const ago = (s) => (s < 120 ? `${s} s` : `${Math.round(s / 60)} min`);

/** The tiles, notes and chart frame of renderStats, with placeholders for every value. */
export function renderStatsPlaceholder(container) {
  const bar = () => skeleton('3em');
  renderBusy(
    container,
    h(
      'dl',
      { class: 'stats' },
      statTile('stat-queued', 'Queued', bar(), skeleton('70%')),
      statTile('stat-delivered', 'Delivered (24 h)', bar()),
      statTile('stat-dead', 'Dead', bar()),
      statTile('stat-held', 'Held', bar()),
      statTile('stat-skipped', 'Skipped', bar(), SKIPPED_NOTE),
      statTile('stat-p50', 'Latency p50', bar()),
      statTile('stat-p95', 'Latency p95', bar()),
    ),
    hourlyChart(null),
  );
}

const SKIPPED_NOTE = 'never sent: see the log for why';

export function renderStats(container, st) {
  // the note is always there, so the tile (and its row) keeps its height as the queue empties and fills
  const oldest = st.oldest_queued_age_s > 0 ? `oldest waiting ${ago(st.oldest_queued_age_s)}` : 'nothing waiting';
  const lagging = st.received_unprocessed > 0 && st.received_unprocessed_oldest_age_s > LAG_NOTICE_AFTER_S;
  render(
    container,
    lagging
      ? h(
          'p',
          { class: 'banner banner--warning', id: 'intake-lag', role: 'status' },
          `Received, not yet processed: ${st.received_unprocessed} (the oldest ${ago(st.received_unprocessed_oldest_age_s)} ago). Nothing is lost; they are processed in order as soon as the worker catches up.`,
        )
      : null,
    h(
      'dl',
      { class: 'stats' },
      statTile('stat-queued', 'Queued', st.queued + (st.delivering ?? 0), oldest),
      statTile('stat-delivered', 'Delivered (24 h)', st.delivered_24h, null, 'success'),
      statTile('stat-dead', 'Dead', st.dead, null, st.dead > 0 ? 'critical' : undefined),
      statTile('stat-held', 'Held', st.held, null, st.held > 0 ? 'warning' : undefined),
      statTile('stat-skipped', 'Skipped', st.skipped ?? 0, SKIPPED_NOTE),
      statTile('stat-p50', 'Latency p50', formatMs(st.p50_latency_ms)),
      statTile('stat-p95', 'Latency p95', formatMs(st.p95_latency_ms)),
    ),
    Array.isArray(st.hourly) ? hourlyChart(st.hourly) : null,
  );
}
