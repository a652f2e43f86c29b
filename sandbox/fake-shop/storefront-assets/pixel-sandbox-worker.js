// Stand-in for Shopify's strict web pixel sandbox: a web worker holding one app pixel. It offers
// the pixel the same API as Shopify's (what @shopify/web-pixels-extension's `register` receives:
// settings, init, analytics.subscribe, browser, customerPrivacy.subscribe) through the global
// `shopify.extend('WebPixel::Render', fn)` that `register` calls, then loads the real bundle
// with importScripts. Browser APIs are asynchronous calls to the page, as in Shopify's sandbox.
'use strict';

var EXTENSION_POINT = 'WebPixel::Render';
var subscribers = {};
var privacySubscribers = {};
var pendingCalls = {};
var nextCallId = 0;

function call(method, args) {
  return new Promise(function (resolve, reject) {
    nextCallId += 1;
    pendingCalls[nextCallId] = { resolve: resolve, reject: reject };
    self.postMessage({ type: 'call', id: nextCallId, method: method, args: args });
  });
}

function storage(area) {
  return {
    getItem: function (key) {
      return call(area + '.getItem', [key]);
    },
    setItem: function (key, value) {
      return call(area + '.setItem', [key, String(value)]);
    },
    removeItem: function (key) {
      return call(area + '.removeItem', [key]);
    },
    key: function (index) {
      return call(area + '.key', [index]);
    },
    length: function () {
      return call(area + '.length', []);
    },
    clear: function () {
      return call(area + '.clear', []);
    },
  };
}

function subscribeIn(table) {
  return function (name, callback) {
    (table[name] = table[name] || []).push(callback);
    return function () {
      var list = table[name] || [];
      var i = list.indexOf(callback);
      if (i >= 0) list.splice(i, 1);
      return i >= 0;
    };
  };
}

function deliver(list, payload) {
  (list || []).slice().forEach(function (callback) {
    try {
      callback(payload);
    } catch (err) {
      self.postMessage({ type: 'error', message: 'pixel subscriber threw: ' + ((err && err.message) || err) });
    }
  });
}

function apiFor(message) {
  return {
    settings: message.settings,
    init: message.init,
    analytics: { subscribe: subscribeIn(subscribers) },
    browser: {
      cookie: {
        get: function (name) {
          return call('cookie.get', [name]);
        },
        set: function (cookieOrName, value) {
          return call('cookie.set', [cookieOrName, value]);
        },
      },
      localStorage: storage('localStorage'),
      sessionStorage: storage('sessionStorage'),
      sendBeacon: function (url, body) {
        return call('sendBeacon', [url, body]);
      },
    },
    customerPrivacy: { subscribe: subscribeIn(privacySubscribers) },
    _pixelInfo: { id: 'sandbox', type: 'APP', runtimeContext: 'STRICT' },
  };
}

self.onmessage = function (e) {
  var message = e.data || {};
  if (message.type === 'load') {
    var api = apiFor(message);
    var registered = false;
    self.shopify = {
      extend: function (point, extend) {
        if (point !== EXTENSION_POINT) throw new Error('unknown extension point ' + point);
        registered = true;
        extend(api);
      },
    };
    try {
      importScripts(message.src);
      if (!registered) throw new Error('the bundle did not call register()');
      self.postMessage({ type: 'ready' });
    } catch (err) {
      self.postMessage({ type: 'error', message: 'pixel failed to load: ' + ((err && err.message) || err) });
    }
  } else if (message.type === 'event') {
    var event = message.event;
    deliver(subscribers[event.name], event);
    deliver(subscribers.all_standard_events, event);
    deliver(subscribers.all_events, event);
  } else if (message.type === 'privacy') {
    deliver(privacySubscribers[message.name], message.payload);
  } else if (message.type === 'result') {
    var pending = pendingCalls[message.id];
    delete pendingCalls[message.id];
    if (pending && message.ok) pending.resolve(message.value);
    else if (pending) pending.reject(new Error(message.error));
  }
};
