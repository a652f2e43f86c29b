// @ts-check
// The "Email me when available" block's script: loaded once per page (deferred) by Shopify for
// every notify-me block. Plain ES2017, no dependencies, kept well under Shopify's 10 KB advice.
// - It follows the shopper's variant choice: the theme's variant events, the product form's `id`
//   field (themes set it and fire `change`), or the `variant` URL parameter. The block shows its
//   form only while that variant is sold out (the product's variants and their availability are
//   in the block's JSON); Liquid already rendered the right state, so nothing moves on load.
// - It posts the form through the app proxy (the form's action) and shows the JSON answer's
//   message in the block's live region. Listeners sit on the document, so a block the theme
//   re-renders (a section reload) keeps working.
(function () {
  'use strict';
  if (/** @type {any} */ (window).__notifyMe) return;
  /** @type {any} */ (window).__notifyMe = true;

  /** @type {WeakMap<Element, Record<string, boolean>>} */
  var availability = new WeakMap();

  /** @param {Element} root @returns {Record<string, boolean>} */
  function variantsOf(root) {
    var known = availability.get(root);
    if (known) return known;
    /** @type {Record<string, boolean>} */
    var map = {};
    try {
      var el = root.querySelector('[data-notify-me-variants]');
      /** @type {Array<{id: number | string, available: boolean}>} */
      var list = JSON.parse((el && el.textContent) || '[]');
      list.forEach(function (v) {
        map[String(v.id)] = v.available === true;
      });
    } catch (e) {
      // unreadable JSON: the block keeps the state Liquid rendered
    }
    availability.set(root, map);
    return map;
  }

  /** A variant id from an event's detail, a gid or a number; '' when none. @param {any} v */
  function idOf(v) {
    if (v === null || v === undefined) return '';
    var m = /(\d+)$/.exec(String(v));
    return m ? m[1] : '';
  }

  /** The variant the shopper has chosen now, as the page shows it. @param {Element} root @param {any} detail */
  function chosen(root, detail) {
    var fromEvent = detail && idOf((detail.variant && detail.variant.id) || detail.variantId);
    if (fromEvent) return fromEvent;
    var section = root.closest('.shopify-section') || document;
    var field = /** @type {HTMLInputElement | HTMLSelectElement | null} */ (
      section.querySelector('form[action*="/cart/add"] [name="id"]') || document.querySelector('form[action*="/cart/add"] [name="id"]')
    );
    if (field && field.value) return idOf(field.value);
    return idOf(new URLSearchParams(location.search).get('variant'));
  }

  /** @param {Element} root @param {string} text @param {string} kind */
  function say(root, text, kind) {
    var status = root.querySelector('[data-notify-me-status]');
    if (!status) return;
    status.textContent = text;
    status.className = 'notify-me__status' + (kind ? ' notify-me__status--' + kind : '');
  }

  /** @param {any} [detail] */
  function sync(detail) {
    document.querySelectorAll('[data-notify-me]').forEach(function (root) {
      var variants = variantsOf(root);
      var id = chosen(root, detail);
      // another product's variant, or none: the block keeps its state
      if (!id || !(id in variants)) return;
      var input = /** @type {HTMLInputElement | null} */ (root.querySelector('[name="variant_id"]'));
      if (input && input.value !== id) {
        input.value = id;
        say(root, '', '');
      }
      /** @type {HTMLElement} */ (root).hidden = variants[id];
    });
  }

  /** @param {Event} e */
  function later(e) {
    var detail = /** @type {CustomEvent} */ (e).detail;
    // after the theme's own handlers have updated the form and the URL
    setTimeout(function () {
      sync(detail);
    }, 0);
  }

  document.addEventListener('change', later, true);
  document.addEventListener('click', later, true);
  window.addEventListener('popstate', later);
  window.addEventListener('pageshow', later);
  ['variant:change', 'variant:changed', 'on:variant:change', 'variantChange', 'variant-change'].forEach(function (name) {
    document.addEventListener(name, later);
  });

  document.addEventListener('submit', function (e) {
    var form = /** @type {HTMLFormElement | null} */ (e.target instanceof Element ? e.target.closest('[data-notify-me-form]') : null);
    var root = form && form.closest('[data-notify-me]');
    if (!form || !root) return;
    e.preventDefault();
    var block = /** @type {HTMLElement} */ (root);
    var button = form.querySelector('button[type="submit"]');
    var email = form.querySelector('[name="email"]');
    var fallback = block.dataset.error || 'Something went wrong. Please try again.';
    if (button) button.setAttribute('disabled', '');
    if (email) email.removeAttribute('aria-invalid');
    say(block, block.dataset.sending || '', '');
    fetch(form.action, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: new URLSearchParams(/** @type {any} */ (new FormData(form))).toString(),
      credentials: 'same-origin',
    })
      .then(function (res) {
        return res
          .json()
          .catch(function () {
            return {};
          })
          .then(function (/** @type {any} */ answer) {
            var error = answer && answer.error;
            var text = (answer && answer.message) || (error && error.message) || fallback;
            if (res.ok) return say(block, text, 'success');
            if (email && error && /email/.test(String(error.code))) email.setAttribute('aria-invalid', 'true');
            say(block, text, 'error');
          });
      })
      .catch(function () {
        say(block, fallback, 'error');
      })
      .then(function () {
        if (button) button.removeAttribute('disabled');
      });
  });

  sync();
})();
