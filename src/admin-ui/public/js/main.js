// Boot: pick the token source (App Bridge in Shopify admin, the dev endpoint in sandbox), load
// the catalog and settings, mount each card, and tick a shared refresh clock.
// Every card is laid out at mount, before its data arrive, with placeholders that take the
// room its loaded content takes (at phone and desktop widths alike); only then are the cards
// shown (body[data-mounted]), so loading moves nothing the merchant already sees.
import { createApi } from './api.js';
import { appBridgeTokens, devTokens } from './auth.js';
import { h, render } from './dom.js';
import { mountActivity } from './views/activity.js';
import { mountBudget } from './views/budget.js';
import { mountConnection } from './views/connection.js';
import { mountEvents } from './views/events.js';
import { mountImport } from './views/import.js';
import { mountLists } from './views/lists.js';
import { mountPermissions } from './views/permissions.js';
import { mountProductAlerts } from './views/product-alerts.js';
import { mountProperties } from './views/properties.js';
import { mountSimulate } from './views/simulate.js';

const TICK_MS = 5000;

const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? null;

function createBus() {
  const target = new EventTarget();
  return {
    on: (type, fn) => target.addEventListener(type, (e) => fn(e.detail)),
    emit: (type, detail) => target.dispatchEvent(new CustomEvent(type, { detail })),
  };
}

function shown() {
  document.body.dataset.mounted = 'true';
  document.getElementById('page-loading')?.remove();
}

function fail(message) {
  const banner = document.getElementById('page-banner');
  banner.textContent = message;
  banner.hidden = false;
  for (const el of document.querySelectorAll('[aria-busy="true"]')) render(el, h('p', { class: 'subdued' }, 'Unavailable.'));
  shown();
}

async function boot() {
  const mode = meta('app-auth');
  const params = new URLSearchParams(location.search);
  const shop = (params.get('shop') || meta('app-dev-shop') || '').toLowerCase();
  const tokens = mode === 'dev' ? devTokens(shop) : appBridgeTokens();
  const api = createApi(tokens);
  const bus = createBus();

  if (mode === 'dev') {
    render(document.getElementById('header-badges'), h('span', { class: 'badge badge--info' }, 'Sandbox'));
  }
  if (shop) document.getElementById('shop-line').textContent = `Forwards ${shop}'s events to your email marketing account.`;

  const [catalog, settings] = await Promise.all([
    fetch('/ui/catalog.json').then((r) => (r.ok ? r.json() : Promise.reject(new Error(`catalog: HTTP ${r.status}`)))),
    api.settings(),
  ]);
  const ctx = { api, bus, catalog, settings, shop, sandbox: catalog.sandbox };

  const connection = mountConnection(document.getElementById('connection-card'), ctx);
  const activity = mountActivity(document.getElementById('activity-card'), ctx);
  const budget = mountBudget(document.getElementById('budget-card'), ctx);
  const history = mountImport(document.getElementById('import-card'), ctx);
  mountEvents(document.getElementById('events-card'), ctx);
  const properties = mountProperties(document.getElementById('properties-card'), ctx);
  const lists = mountLists(document.getElementById('lists-card'), ctx);
  const permissions = mountPermissions(document.getElementById('permissions-card'), ctx);
  const alerts = mountProductAlerts(document.getElementById('alerts-card'), ctx);
  if (catalog.sandbox && meta('app-simulate') === 'on' && catalog.sandbox.simulate_topics.length) {
    mountSimulate(document.getElementById('simulate-card'), ctx);
  }
  shown();

  await Promise.all([
    connection.refresh(),
    activity.refresh(),
    budget.refresh(),
    history.refresh(),
    properties.refresh(),
    lists.refresh(),
    permissions.refresh(),
    alerts.refresh(),
  ]);
  document.body.dataset.ready = 'true';

  let n = 0;
  setInterval(() => {
    if (document.visibilityState === 'visible') bus.emit('tick', ++n);
  }, TICK_MS);
}

boot().catch((err) => fail(`The page could not load: ${err?.message ?? err}`));
