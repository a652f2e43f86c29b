// Stand-in for Shopify's pixel manager on a storefront page. It publishes the page's standard
// customer events with Shopify's envelope (id, name, seq, type, timestamp, clientId, context,
// data), keeps the visitor's client id in the _shopify_y cookie, honours the tracking consent the
// pixel's toml requires, and runs the app pixel in a web worker (pixel-sandbox-worker.js),
// answering its browser calls (sendBeacon, cookies, storage) from the page.
(function () {
  'use strict';

  var config = JSON.parse(document.getElementById('sandbox-storefront').textContent);
  var statusEl = document.getElementById('pixel-status');
  var logEl = document.getElementById('event-log');
  var CONSENT_COOKIE = 'sandbox_tracking_consent';
  var seq = 0;
  var worker = null;
  var ready = false;
  var queued = [];

  function uuid() {
    if (self.crypto && crypto.randomUUID) return crypto.randomUUID();
    var b = crypto.getRandomValues(new Uint8Array(16));
    return Array.prototype.map
      .call(b, function (x) {
        return (x + 256).toString(16).slice(1);
      })
      .join('');
  }
  function getCookie(name) {
    var found = document.cookie.split('; ').filter(function (c) {
      return c.indexOf(name + '=') === 0;
    })[0];
    return found ? decodeURIComponent(found.slice(name.length + 1)) : null;
  }
  function setCookie(name, value, maxAgeSec) {
    document.cookie = name + '=' + encodeURIComponent(value) + '; path=/; max-age=' + maxAgeSec + '; samesite=lax';
  }
  function status(text) {
    statusEl.textContent = text;
  }
  function log(text) {
    var li = document.createElement('li');
    li.textContent = text;
    logEl.appendChild(li);
  }

  /** Shopify's client id: one per browser, kept for a year. */
  function clientId() {
    var id = getCookie('_shopify_y');
    if (!id) {
      id = uuid();
      setCookie('_shopify_y', id, 365 * 24 * 3600);
    }
    return id;
  }

  /** No consent banner here: tracking is allowed until the visitor declines it below. */
  function consentGiven() {
    return getCookie(CONSENT_COOKIE) !== 'declined';
  }
  function customerPrivacy() {
    var granted = consentGiven();
    return {
      analyticsProcessingAllowed: granted,
      marketingAllowed: granted,
      preferencesProcessingAllowed: granted,
      saleOfDataAllowed: false,
    };
  }

  function locationOf(l) {
    return {
      hash: l.hash,
      host: l.host,
      hostname: l.hostname,
      href: l.href,
      origin: l.origin,
      pathname: l.pathname,
      port: l.port,
      protocol: l.protocol,
      search: l.search,
    };
  }
  function context() {
    var location = locationOf(document.location);
    return {
      document: { characterSet: document.characterSet, location: location, referrer: document.referrer, title: document.title },
      navigator: {
        cookieEnabled: navigator.cookieEnabled,
        language: navigator.language,
        languages: Array.prototype.slice.call(navigator.languages || []),
        userAgent: navigator.userAgent,
      },
      window: {
        innerHeight: window.innerHeight,
        innerWidth: window.innerWidth,
        location: location,
        origin: window.origin,
        outerHeight: window.outerHeight,
        outerWidth: window.outerWidth,
        pageXOffset: window.pageXOffset,
        pageYOffset: window.pageYOffset,
        screen: { height: screen.height, width: screen.width },
        screenX: window.screenX,
        screenY: window.screenY,
        scrollX: window.scrollX,
        scrollY: window.scrollY,
      },
    };
  }

  /** Publishes a standard event to the pixel (once it has loaded, in order). */
  function publish(name, data) {
    seq += 1;
    var event = {
      id: 'sh-' + uuid(),
      name: name,
      seq: seq,
      type: 'standard',
      timestamp: new Date().toISOString(),
      clientId: clientId(),
      context: context(),
      data: data || {},
    };
    log(name);
    if (!worker) return;
    if (ready) worker.postMessage({ type: 'event', event: event });
    else queued.push(event);
  }

  function storageCall(area, op, args) {
    var s = window[area];
    if (op === 'length') return s.length;
    return s[op].apply(s, args);
  }
  var calls = {
    sendBeacon: function (url, body) {
      var ok = navigator.sendBeacon(url, body);
      try {
        log('→ pixel sent ' + JSON.parse(body).events.length + ' event(s) to ' + url);
      } catch (e) {
        log('→ pixel sent a beacon to ' + url);
      }
      return ok;
    },
    'cookie.get': function (name) {
      return name ? getCookie(name) || '' : document.cookie;
    },
    'cookie.set': function (cookieOrName, value) {
      document.cookie = value === undefined ? cookieOrName : cookieOrName + '=' + encodeURIComponent(value) + '; path=/';
      return document.cookie;
    },
  };

  function answer(message) {
    var result;
    try {
      var dot = message.method.indexOf('.');
      var area = message.method.slice(0, dot);
      var fn =
        calls[message.method] ||
        ((area === 'localStorage' || area === 'sessionStorage') &&
          function () {
            return storageCall(area, message.method.slice(dot + 1), message.args);
          });
      if (!fn) throw new Error('no such browser API: ' + message.method);
      result = { type: 'result', id: message.id, ok: true, value: fn.apply(null, message.args) };
    } catch (err) {
      result = { type: 'result', id: message.id, ok: false, error: String((err && err.message) || err) };
    }
    worker.postMessage(result);
  }

  function loadPixel() {
    if (worker) return;
    status('pixel loading…');
    worker = new Worker('/_sandbox/storefront/pixel-sandbox-worker.js', { name: 'email-pixel (strict sandbox)' });
    worker.onmessage = function (e) {
      var m = e.data;
      if (m.type === 'call') return answer(m);
      if (m.type === 'ready') {
        ready = true;
        status('pixel active: events go to ' + config.pixel.endpoint);
        queued.splice(0).forEach(function (event) {
          worker.postMessage({ type: 'event', event: event });
        });
      } else if (m.type === 'error') {
        status(m.message);
        console.error('[sandbox pixel] ' + m.message);
      }
    };
    worker.onerror = function (e) {
      status('pixel failed: ' + e.message);
    };
    worker.postMessage({
      type: 'load',
      src: config.pixel.src,
      settings: config.pixel.settings,
      init: { context: context(), data: config.init.data, customerPrivacy: customerPrivacy() },
    });
  }

  // Consent: the pixel requires analytics and marketing (shopify.extension.toml); Shopify loads
  // it only with both, and tells a loaded pixel when the visitor changes their mind.
  var consentState = document.getElementById('consent-state');
  var consentToggle = document.getElementById('consent-toggle');
  function showConsent() {
    var granted = consentGiven();
    consentState.textContent = granted ? 'Tracking allowed.' : 'Tracking declined.';
    consentToggle.textContent = granted ? 'Decline tracking' : 'Allow tracking';
  }
  consentToggle.addEventListener('click', function () {
    setCookie(CONSENT_COOKIE, consentGiven() ? 'declined' : 'granted', 365 * 24 * 3600);
    showConsent();
    if (worker) worker.postMessage({ type: 'privacy', name: 'visitorConsentCollected', payload: { customerPrivacy: customerPrivacy() } });
    else if (consentGiven() && config.pixel.active) loadPixel();
    if (!consentGiven()) status('the visitor declined tracking: the pixel sends nothing more');
    else if (ready) status('pixel active: events go to ' + config.pixel.endpoint);
  });
  showConsent();

  window.SandboxPixels = { publish: publish };

  if (!config.pixel.active) status(config.pixel.reason);
  else if (!consentGiven()) status('pixel not loaded: the visitor declined tracking');
  else loadPixel();
  config.events.forEach(function (e) {
    publish(e.name, e.data);
  });
})();
