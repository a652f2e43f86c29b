// The storefront's server-rendered HTML. Every page embeds its configuration as JSON (the pixel
// to load and its settings, init data, and the standard events the page publishes on load) and
// loads pixel-host.js, the stand-in for Shopify's pixel manager.
import { CATALOG, formatPrice, imagePath, linesOf, cartTotal, cartQuantity, type CartRecord, type CatalogProduct } from './storefront-data';

export interface PageEvent {
  name: string;
  data: unknown;
}

export interface PageConfig {
  pixel: { active: boolean; reason: string; settings: { pixelKey: string } | null; src: string; endpoint: string };
  init: { data: { customer: unknown; cart: unknown; shop: unknown; purchasingCompany: null } };
  events: PageEvent[];
}

export interface PageFrame {
  shopName: string;
  cart: CartRecord | undefined;
  loggedIn: boolean;
  config: PageConfig;
}

export const esc = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
/** JSON safe inside <script>: no `</script>`, no HTML comment openers. */
const scriptJson = (v: unknown) => JSON.stringify(v).replace(/</g, '\\u003c');

export function layout(title: string, frame: PageFrame, main: string, script = '', head = ''): string {
  const count = frame.cart ? cartQuantity(frame.cart) : 0;
  const account = frame.loggedIn
    ? `<form method="post" action="/account/logout"><span>Signed in as Jane Sandbox</span> <button type="submit">Sign out</button></form>`
    : `<form method="post" action="/account/login"><button type="submit">Sign in as Jane (sample customer)</button></form>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} – ${esc(frame.shopName)}</title>
<link rel="stylesheet" href="/_sandbox/storefront/storefront.css">
${head}
</head>
<body>
<header class="top">
  <a class="brand" href="/">${esc(frame.shopName)}</a>
  <form class="search" action="/search" method="get" role="search"><input name="q" aria-label="Search products" placeholder="Search products"> <button type="submit">Search</button></form>
  <a class="cart-link" href="/cart">Cart (<span id="cart-count">${count}</span>)</a>
</header>
<main>
${main}
</main>
<footer class="sandbox">
  <p><strong>Sandbox storefront</strong> of the simulated shop. Customer events go to the app's web pixel, running in a web worker as in Shopify's strict sandbox.</p>
  <p id="pixel-status" role="status">${esc(frame.config.pixel.active ? 'pixel loading…' : frame.config.pixel.reason)}</p>
  <div class="controls">
    <span id="consent-state"></span>
    <button type="button" id="consent-toggle"></button>
    ${account}
  </div>
  <details open><summary>Customer events on this page</summary><ol id="event-log"></ol></details>
</footer>
<script id="sandbox-storefront" type="application/json">${scriptJson(frame.config)}</script>
<script src="/_sandbox/storefront/pixel-host.js"></script>
${script ? `<script>${script}</script>` : ''}
</body>
</html>`;
}

function productCard(p: CatalogProduct): string {
  return `<li class="card"><a href="/products/${esc(p.handle)}"><img src="${esc(imagePath(p))}" alt="" width="160" height="160"><span class="title">${esc(p.title)}</span></a><span class="price">${formatPrice(p.price)}</span></li>`;
}

export function homePage(products: readonly CatalogProduct[] = CATALOG): string {
  return `<h1>All products</h1><ul class="grid">${products.map(productCard).join('')}</ul>`;
}

export function searchPage(query: string, results: readonly CatalogProduct[]): string {
  return `<h1>Search: ${esc(query)}</h1>${results.length ? `<ul class="grid">${results.map(productCard).join('')}</ul>` : '<p>No products match.</p>'}`;
}

/** A variant as the product page offers it: sold out or not, from the shop's stock. */
export interface PageVariant {
  id: string;
  title: string;
  available: boolean;
  quantity: number;
}

export interface ProductPageParts {
  /** Every variant of the product, in order. */
  variants: readonly PageVariant[];
  /** The variant the page shows (the `variant` URL parameter, else the first available one). */
  selected: string;
  /** App blocks rendered into the product's column (the notify-me block). */
  blocks?: string;
}

export function productPage(p: CatalogProduct, parts?: ProductPageParts): string {
  const variants = parts?.variants ?? [{ id: p.variantId, title: 'Default Title', available: true, quantity: 1 }];
  const selected = variants.find((v) => v.id === (parts?.selected ?? p.variantId)) ?? variants[0]!;
  const picker =
    variants.length > 1
      ? `<fieldset class="variant-picker"><legend>${esc(p.optionName ?? 'Option')}</legend>${variants
          .map(
            (v) =>
              `<input type="radio" name="variant-option" id="variant-${esc(v.id)}" value="${esc(v.id)}" data-available="${v.available}"${v.id === selected.id ? ' checked' : ''}><label for="variant-${esc(v.id)}">${esc(v.title)}${v.available ? '' : ' (sold out)'}</label>`,
          )
          .join('')}</fieldset>`
      : '';
  return `<article class="product">
  <img src="${esc(imagePath(p))}" alt="${esc(p.title)}" width="320" height="320">
  <div>
    <h1>${esc(p.title)}</h1>
    <p class="vendor">${esc(p.vendor)}</p>
    <p class="price" data-testid="price">${formatPrice(p.price)}</p>
    <p>${esc(p.description)}</p>
    <form id="product-form" class="product-form" action="/cart/add" method="post">
      ${picker}
      <input type="hidden" name="id" value="${esc(selected.id)}">
      <button type="button" id="add-to-cart" data-variant-id="${esc(selected.id)}"${selected.available ? '' : ' disabled'}>${selected.available ? 'Add to cart' : 'Sold out'}</button>
    </form>
    <p id="added" role="status" hidden>Added to your cart. <a href="/cart">View cart</a></p>
    ${parts?.blocks ?? ''}
  </div>
</article>
${parts ? stockControls(parts.variants) : ''}`;
}

/** The sandbox's stand-in for the merchant's inventory screen: restock or sell out each variant. */
function stockControls(variants: readonly PageVariant[]): string {
  const rows = variants
    .map((v) => {
      const [quantity, verb] = v.available ? [0, 'Sell out'] : [10, 'Restock'];
      const name = v.title === 'Default Title' ? 'this product' : v.title;
      return `<tr><td>${esc(v.title)}</td><td>${v.quantity}</td><td><form method="post" action="/_sandbox/stock"><input type="hidden" name="variant_id" value="${esc(v.id)}"><input type="hidden" name="quantity" value="${quantity}"><button type="submit">${verb} ${esc(name)}</button></form></td></tr>`;
    })
    .join('');
  return `<section class="sandbox-stock" aria-labelledby="stock-title">
  <h2 id="stock-title">Stock (sandbox)</h2>
  <p>As the merchant would in Shopify's admin. Restocking sends the app <code>variants/in_stock</code> and <code>products/update</code>; selling out sends <code>variants/out_of_stock</code>.</p>
  <table class="lines"><thead><tr><th>Option</th><th>In stock</th><th>Change</th></tr></thead><tbody>${rows}</tbody></table>
</section>`;
}

/** The variant picker, as Shopify's themes do it: the product form's `id`, the `variant` URL parameter, a `change` on the id field. */
export const VARIANT_SCRIPT = `
(function () {
  var form = document.getElementById('product-form');
  if (!form) return;
  var field = form.querySelector('[name="id"]');
  var button = document.getElementById('add-to-cart');
  form.addEventListener('change', function (e) {
    var radio = e.target;
    if (!radio || radio.name !== 'variant-option') return;
    var available = radio.dataset.available === 'true';
    field.value = radio.value;
    button.dataset.variantId = radio.value;
    button.disabled = !available;
    button.textContent = available ? 'Add to cart' : 'Sold out';
    var url = new URL(location.href);
    url.searchParams.set('variant', radio.value);
    history.replaceState(null, '', url);
    field.dispatchEvent(new Event('change', { bubbles: true }));
  });
})();`;

/** The product page's add-to-cart: the AJAX cart, then product_added_to_cart, as Shopify's themes. */
export const ADD_TO_CART_SCRIPT = `
document.getElementById('add-to-cart').addEventListener('click', function () {
  var button = this;
  button.disabled = true;
  fetch('/cart/add.js', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: button.dataset.variantId, quantity: 1 }) })
    .then(function (res) { if (!res.ok) throw new Error('cart/add ' + res.status); return res.json(); })
    .then(function (answer) {
      SandboxPixels.publish('product_added_to_cart', { cartLine: answer.cartLine });
      document.getElementById('cart-count').textContent = String(answer.cart.totalQuantity);
      document.getElementById('added').hidden = false;
    })
    .finally(function () { button.disabled = false; });
});`;

export function cartPage(cart: CartRecord | undefined): string {
  const lines = cart ? linesOf(cart) : [];
  if (!lines.length) return `<h1>Your cart</h1><p>Your cart is empty. <a href="/">Continue shopping</a></p>`;
  const rows = lines
    .map((l) => `<tr><td>${esc(l.product.title)}</td><td>${l.quantity}</td><td>${formatPrice(l.product.price * l.quantity)}</td></tr>`)
    .join('');
  return `<h1>Your cart</h1>
<table class="lines"><thead><tr><th>Product</th><th>Quantity</th><th>Total</th></tr></thead><tbody>${rows}</tbody>
<tfoot><tr><th colspan="2">Subtotal</th><td>${formatPrice(cartTotal(cart!))}</td></tr></tfoot></table>
<p><a class="button" href="/checkout">Check out</a></p>`;
}

export function checkoutPage(cart: CartRecord, email: string | null): string {
  const lines = linesOf(cart)
    .map((l) => `<li>${esc(l.product.title)} × ${l.quantity} <span>${formatPrice(l.product.price * l.quantity)}</span></li>`)
    .join('');
  return `<h1>Checkout</h1>
<section class="summary"><h2>Order summary</h2><ul>${lines}</ul><p>Total: <strong>${formatPrice(cartTotal(cart))}</strong></p></section>
<form id="contact" class="contact">
  <h2>Contact</h2>
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="email" required value="${esc(email ?? '')}">
  <button type="submit">Continue to shipping</button>
</form>
<p id="contact-saved" role="status" hidden>Contact information saved. Shipping and payment are not simulated in the sandbox.</p>`;
}

/** The contact step: saves the email on the checkout, then checkout_contact_info_submitted. */
export const CONTACT_SCRIPT = `
document.getElementById('contact').addEventListener('submit', function (e) {
  e.preventDefault();
  var email = document.getElementById('email').value;
  fetch('/checkout/contact', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: email }) })
    .then(function (res) { if (!res.ok) throw new Error('checkout/contact ' + res.status); return res.json(); })
    .then(function (answer) {
      SandboxPixels.publish('checkout_contact_info_submitted', { checkout: answer.checkout });
      document.getElementById('contact-saved').hidden = false;
    });
});`;

export function productImageSvg(p: CatalogProduct): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="320" height="320" viewBox="0 0 320 320"><rect width="320" height="320" fill="${esc(p.color)}"/><text x="160" y="175" font-family="sans-serif" font-size="28" fill="#fff" text-anchor="middle">${esc(p.title)}</text></svg>`;
}
