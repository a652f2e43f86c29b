// Permissions card: the optional features (product images, storefront pixel), whether the store
// granted the scopes each needs, a "Grant access" button for a missing one, and the storefront
// pixel's activation state with "Retry activation" and its checks of the last day (emails Shopify
// confirmed, claims that expired unconfirmed, events over a limit, events waiting now for Shopify's
// product data, unknown products dropped, events dropped after waiting too long for product data).
// Those counts come with the pixel's state in one answer and always take the same seven tiles,
// shown (as '—') before the access is granted too, so the card does not move when they arrive
// or change; before the first answer the rows are laid out from FEATURES with placeholders.
// Granting: in Shopify admin, App Bridge's shopify.scopes.request([...]) opens Shopify's grant
// modal; in sandbox (no App Bridge) the simulated shop grants them (/_dev/grant-scopes) and, like
// Shopify, sends app/scopes_update. Either way the card then asks the app to re-read the granted
// scopes from Shopify (?refresh=1), so it does not depend on when the webhook arrives.
import { announce, busy, h, render, renderBusy, skeleton, slot } from '../dom.js';

const FEATURES = {
  product_images: {
    scopes: ['read_products'],
    title: 'Product images in emails',
    text: 'Adds each product\u2019s image, page link and handle to the line items of order, checkout and shipping events.',
  },
  storefront_pixel: {
    scopes: ['write_pixels', 'read_customer_events', 'read_pixels'],
    title: 'Storefront activity',
    text: 'A pixel on your online store sends product views, carts and checkout steps, for browse and cart flows. Emails count only once Shopify knows them for your store; product names, prices and links come from Shopify.',
  },
};

const ACTIVITY = [
  ['claims_vouched', 'Emails confirmed by Shopify'],
  ['claims_pending', 'Waiting for Shopify now'],
  ['claims_expired', 'Expired unconfirmed'],
  ['events_limited', 'Events over a daily limit'],
  ['products_waiting', 'Waiting for product data now'],
  ['products_dropped', 'Unknown products dropped'],
  ['products_expired', 'No product data in time'],
];

const PIXEL_STATES = {
  active: ['success', 'Active'],
  pending: ['info', 'Activating'],
  missing_scopes: ['warning', 'Needs access'],
  error: ['critical', 'Not active'],
  removed: ['neutral', 'Removed'],
  none: ['neutral', 'Not activated'],
};

const tag = (tone, label) => h('span', { class: `badge badge--${tone}` }, label);

export function mountPermissions(card, ctx) {
  const { api, bus, sandbox, shop } = ctx;
  const body = slot(card);
  const result = h('p', { class: 'help', role: 'status' });
  let pixelState = null;

  async function askShopify(scopes) {
    if (sandbox?.grant_scopes) {
      const res = await fetch('/_dev/grant-scopes', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ shop, scopes }),
      });
      const data = await res.json().catch(() => null);
      if (!res.ok) throw new Error(data?.error?.message ?? `HTTP ${res.status}`);
      return true;
    }
    const bridge = window.shopify;
    if (!bridge?.scopes || typeof bridge.scopes.request !== 'function')
      throw new Error('Open this app from your Shopify admin to grant access.');
    const answer = await bridge.scopes.request(scopes);
    return answer?.result === 'granted-all';
  }

  async function grant(feature, button) {
    await busy(button, async () => {
      try {
        const granted = await askShopify(feature.scopes);
        if (!granted) {
          result.textContent = 'Access was not granted; the feature stays off.';
          return;
        }
        const view = await refresh({ sync: true });
        const now = view?.features.find((f) => f.feature === feature.feature);
        if (now?.granted && feature.feature === 'storefront_pixel') await activate();
        result.textContent = now?.granted
          ? `${FEATURES[feature.feature]?.title ?? feature.feature}: access granted.`
          : 'Shopify has not confirmed the access yet; reload in a moment.';
      } catch (err) {
        result.textContent = `Access could not be granted: ${err.message}`;
      }
    });
  }

  async function activate(button) {
    const run = async () => {
      try {
        const view = await api.activatePixel();
        announce(
          view.state === 'active' ? 'The storefront pixel is active.' : `The storefront pixel is not active: ${view.error ?? view.state}`,
        );
      } catch (err) {
        result.textContent = `The pixel could not be activated: ${err.message}`;
      }
      await refresh();
    };
    return button ? busy(button, run) : run();
  }

  function pixelLine(pixel, granted) {
    const [tone, label] = granted === false ? PIXEL_STATES.missing_scopes : (PIXEL_STATES[pixel?.state] ?? PIXEL_STATES.none);
    const retry =
      granted && pixel?.state !== 'active'
        ? h(
            'button',
            {
              class: 'button button--small',
              type: 'button',
              dataset: { action: 'activate-pixel' },
              onclick: (e) => activate(e.currentTarget),
            },
            pixel?.state === 'none' ? 'Activate' : 'Retry activation',
          )
        : null;
    return h(
      'div',
      { class: 'test-result pixel-line', dataset: { pixelState: granted === false ? 'missing_scopes' : (pixel?.state ?? 'none') } },
      h('span', {}, 'Pixel: '),
      granted === undefined ? skeleton('80px') : tag(tone, label),
      retry,
      granted && pixel?.error ? h('span', { class: pixel.state === 'error' ? 'text-critical' : 'subdued' }, pixel.error) : null,
    );
  }

  /** The last day's checks: seven tiles, '—' until known. */
  function activityLine(activity) {
    return h(
      'div',
      { class: 'pixel-activity', dataset: { pixelActivity: activity ? 'loaded' : 'none' } },
      h('p', { class: 'help' }, `Storefront checks, last ${activity?.window_hours ?? 24} hours`),
      h(
        'dl',
        { class: 'stats stats--compact' },
        ACTIVITY.map(([key, label]) =>
          h(
            'div',
            { class: 'stat', dataset: { count: key } },
            h('dt', { class: 'stat__label' }, label),
            h('dd', { class: 'stat__value' }, activity && Number.isFinite(activity[key]) ? String(activity[key]) : '\u2014'),
          ),
        ),
      ),
    );
  }

  /** One feature; `feature.granted` undefined: not known yet (placeholders). */
  function row(feature, pixel) {
    const info = FEATURES[feature.feature] ?? { title: feature.feature, text: '' };
    const control =
      feature.granted === undefined
        ? skeleton('96px')
        : feature.granted
          ? tag('success', 'Granted')
          : h(
              'button',
              {
                class: 'button button--primary button--small',
                type: 'button',
                dataset: { action: 'grant', feature: feature.feature },
                onclick: (e) => grant(feature, e.currentTarget),
              },
              'Grant access',
            );
    const pixelRow = feature.feature === 'storefront_pixel';
    return h(
      'li',
      { class: 'switch-row', dataset: { feature: feature.feature, granted: String(feature.granted ?? 'unknown') } },
      h(
        'div',
        { class: 'switch-row__text' },
        h('span', { class: 'switch-row__label' }, info.title),
        h('p', { class: 'help' }, info.text, ' ', h('span', { class: 'topics' }, `Needs ${feature.scopes.join(', ')}`)),
        pixelRow ? pixelLine(pixel, feature.granted) : null,
        pixelRow ? activityLine(feature.granted ? (pixel?.activity ?? null) : null) : null,
      ),
      h('div', { class: 'switch-row__control' }, control),
    );
  }

  renderBusy(
    body,
    h(
      'ul',
      { class: 'switch-list' },
      Object.entries(FEATURES).map(([feature, f]) => row({ feature, scopes: f.scopes }, null)),
    ),
    result,
  );

  async function refresh({ sync = false } = {}) {
    try {
      const [view, pixel] = await Promise.all([api.permissions({ refresh: sync }), api.pixel().catch(() => null)]);
      pixelState = pixel?.state ?? null;
      render(
        body,
        h(
          'ul',
          { class: 'switch-list' },
          view.features.map((f) => row(f, pixel)),
        ),
        result,
      );
      return view;
    } catch (err) {
      render(
        body,
        h('p', { class: 'text-critical' }, `Could not load the permissions: ${err.message} `),
        h('button', { class: 'button button--plain', type: 'button', onclick: () => refresh() }, 'Try again'),
      );
      return null;
    }
  }

  bus.on('tick', () => {
    if (pixelState === 'pending') refresh();
  });
  return { refresh };
}
