// Activity card: stats with the hourly chart, the test event, and the delivery log.
import { busy, h, render, slot } from '../dom.js';
import { mountDeliveries } from './deliveries.js';
import { renderStats, renderStatsPlaceholder } from './stats.js';
import { mountTestEvent } from './test-event.js';

export function mountActivity(card, ctx) {
  const { api, bus } = ctx;
  const statsBox = h('div', { id: 'stats', class: 'stats-box' });
  renderStatsPlaceholder(statsBox);
  const testBox = h('div', { class: 'test-box' });
  const logBox = h('div', { class: 'log-box' });
  const refreshButton = h(
    'button',
    { class: 'button button--plain', type: 'button', id: 'refresh-activity', onclick: () => busy(refreshButton, refreshButtonClicked) },
    'Refresh',
  );
  render(slot(card, 'actions'), refreshButton);
  render(slot(card), statsBox, testBox, logBox);

  mountTestEvent(testBox, ctx);
  const log = mountDeliveries(logBox, ctx);

  let lastStats = '';
  let statsInFlight = false;
  async function refreshStats() {
    if (statsInFlight) return;
    statsInFlight = true;
    try {
      const st = await api.stats();
      const json = JSON.stringify(st);
      if (json !== lastStats) renderStats(statsBox, st);
      lastStats = json;
    } catch (err) {
      render(statsBox, h('p', { class: 'text-critical', role: 'alert' }, `Could not load stats: ${err.message}`));
      lastStats = '';
    } finally {
      statsInFlight = false;
    }
  }

  async function refreshAll() {
    await Promise.all([refreshStats(), log.load()]);
  }

  /** The Refresh button: this card, and whatever refreshes with it (the delivery budget). */
  async function refreshButtonClicked() {
    bus.emit('refresh');
    await refreshAll();
  }

  bus.on('tick', refreshStats);
  bus.on('deliveries', refreshStats);
  bus.on('connection', refreshStats);
  return { refresh: refreshAll };
}
