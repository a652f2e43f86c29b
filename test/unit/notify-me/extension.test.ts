// The notify-me theme app extension as Shopify reads it: a theme extension whose app block targets
// sections of product templates, loads assets that exist, translates keys its locale has, and
// whose script stays within Shopify's advice (10 KB). Rendered with liquidjs as the sandbox
// storefront renders it: hidden while the chosen variant is on sale, the form posting through
// the app proxy, a logged-in customer's email filled in.
import fs from 'node:fs';
import path from 'node:path';
import { NOTIFY_ME_DIR, notifyMeBlock, readBlock, type BlockContext } from '../../../sandbox/fake-shop/notify-me-block';

const SOCKS: BlockContext['product'] = {
  id: '8105',
  title: 'Merino Socks',
  handle: 'merino-socks',
  variants: [
    { id: '45105', title: 'Small', available: false },
    { id: '45106', title: 'Medium', available: true },
  ],
};

/** The block's outer element (data-notify-me) and whether it carries `hidden`. */
const outer = (html: string) => /<div\s+class="notify-me"[^>]*>/.exec(html)![0];

describe('the notify-me theme app extension', () => {
  it('is a theme extension with an app block for product templates, whose assets and translations exist', () => {
    const toml = fs.readFileSync(path.join(NOTIFY_ME_DIR, 'shopify.extension.toml'), 'utf8');
    expect(toml).toMatch(/^type = "theme"$/m);
    expect(toml).toMatch(/^name = "notify-me"$/m);
    const { template, schema, locale } = readBlock();
    expect(schema).toMatchObject({ target: 'section', enabled_on: { templates: ['product'] } });
    for (const asset of [schema.javascript, schema.stylesheet])
      expect(fs.existsSync(path.join(NOTIFY_ME_DIR, 'assets', asset!))).toBe(true);
    const keys = [...template.matchAll(/'([a-z_.]+)'\s*\|\s*t\b/g)].map((m) => m[1]!);
    expect(keys.length).toBeGreaterThan(3);
    const has = (key: string) => key.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], locale);
    for (const key of keys) expect([key, typeof has(key)]).toEqual([key, 'string']);
    for (const s of schema.settings) expect([s.id, typeof s.default]).toEqual([s.id, 'string']);
  });

  it("keeps its script under Shopify's 10 KB advice, with no imports", () => {
    const js = fs.readFileSync(path.join(NOTIFY_ME_DIR, 'assets', 'notify-me.js'));
    expect(js.length).toBeLessThan(10 * 1024);
    expect(js.toString('utf8')).not.toMatch(/^\s*(import|export)\s/m);
  });

  it('renders hidden when the chosen variant is on sale, shown when it is sold out, naming the variant it is for', () => {
    const block = notifyMeBlock();
    const onSale = block.render({ product: SOCKS, selectedVariantId: null, customer: null });
    expect(outer(onSale)).toMatch(/\shidden\s/);
    expect(onSale).toContain('name="variant_id" value="45106"');
    const soldOut = block.render({ product: SOCKS, selectedVariantId: '45105', customer: null });
    expect(outer(soldOut)).not.toMatch(/\shidden\s/);
    expect(soldOut).toContain('name="variant_id" value="45105"');
    const json = /<script type="application\/json" data-notify-me-variants>([\s\S]*?)<\/script>/.exec(soldOut)![1]!;
    expect(JSON.parse(json)).toEqual([
      { id: 45105, available: false },
      { id: 45106, available: true },
    ]);
  });

  it('posts through the app proxy under the locale root, with a live region for the answer', () => {
    const block = notifyMeBlock();
    const html = block.render({ product: SOCKS, selectedVariantId: '45105', customer: null });
    expect(html).toContain('action="/apps/email-connector/back-in-stock"');
    expect(html).toMatch(/role="status" aria-live="polite"/);
    expect(html).toMatch(/<label class="notify-me__label" for="notify-me-email-[^"]+">Email<\/label>/);
    expect(block.render({ product: SOCKS, selectedVariantId: '45105', customer: null, rootUrl: '/fr' })).toContain(
      'action="/fr/apps/email-connector/back-in-stock"',
    );
  });

  it("fills in a logged-in customer's email, read-only, and asks a guest for one", () => {
    const block = notifyMeBlock();
    const customer = block.render({ product: SOCKS, selectedVariantId: '45105', customer: { id: '7001', email: 'jane@example.com' } });
    expect(customer).toMatch(/value="jane@example\.com"\s+autocomplete="email"\s+readonly/);
    const guest = block.render({ product: SOCKS, selectedVariantId: '45105', customer: null });
    expect(guest).not.toContain('readonly');
    expect(guest).toMatch(/type="email"[\s\S]*required/);
  });

  it('escapes what the merchant and the customer wrote', () => {
    const block = notifyMeBlock();
    const html = block.render({
      product: SOCKS,
      selectedVariantId: '45105',
      customer: { id: '1', email: 'a"><script>x</script>@example.com' },
    });
    expect(html).not.toContain('<script>x</script>');
  });
});
