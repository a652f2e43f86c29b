// The endpoint is fixed at build time; the built bundle runs with nothing but Shopify's sandbox
// global (`shopify.extend`), stays small, and the extension's toml declares what Shopify needs.
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { buildPixel, checkAppUrl } from '../../../extensions/email-pixel/build';
import { pixelEndpoint, SANDBOX_ENDPOINT } from '../../../extensions/email-pixel/src/endpoint';
import { checkout, event, resetSeq } from './fixtures';

const EXT = path.resolve(__dirname, '..', '..', '..', 'extensions', 'email-pixel');

/** Runs a bundle the way the sandbox does: a bare global with `shopify.extend`, timers and fetch. */
function runBundle(code: string, settings: Record<string, unknown>) {
  const beacons: Array<{ url: string; body: string }> = [];
  const subscribers = new Map<string, (e: unknown) => void>();
  let point = '';
  const api = {
    settings,
    analytics: { subscribe: (name: string, cb: (e: unknown) => void) => subscribers.set(name, cb) },
    browser: { sendBeacon: (url: string, body: string) => (beacons.push({ url, body }), Promise.resolve(true)) },
    init: { data: { customer: null }, customerPrivacy: { analyticsProcessingAllowed: true, marketingAllowed: true } },
    customerPrivacy: { subscribe: () => () => true },
  };
  const sandbox = {
    shopify: { extend: (p: string, fn: (a: typeof api) => void) => ((point = p), fn(api)) },
    setTimeout,
    clearTimeout,
    Promise,
    JSON,
    Date,
    Math,
    Object,
    Array,
    String,
    RegExp,
    isFinite,
    TextEncoder,
    fetch: () => Promise.resolve(),
  };
  vm.runInNewContext(code, sandbox);
  return { beacons, subscribers, point: () => point };
}

describe('pixel endpoint', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('defaults to the sandbox app, http://localhost:3000/pixel/events', () => {
    delete process.env.SHOPIFY_APP_URL;
    process.env.NODE_ENV = 'test';
    expect(pixelEndpoint()).toBe('http://localhost:3000/pixel/events');
    expect(SANDBOX_ENDPOINT).toBe('http://localhost:3000/pixel/events');
  });

  it('is SHOPIFY_APP_URL + /pixel/events when the build defines it', () => {
    process.env.SHOPIFY_APP_URL = 'https://connector.example.com/';
    expect(pixelEndpoint()).toBe('https://connector.example.com/pixel/events');
  });

  it('is null (the pixel stays silent) in a production build without an app URL, never localhost', () => {
    delete process.env.SHOPIFY_APP_URL;
    process.env.NODE_ENV = 'production';
    expect(pixelEndpoint()).toBeNull();
  });

  it('accepts https app URLs, and http only for localhost', () => {
    expect(checkAppUrl('https://connector.example.com/')).toBe('https://connector.example.com');
    expect(checkAppUrl('http://127.0.0.1:4321')).toBe('http://127.0.0.1:4321');
    expect(() => checkAppUrl('http://connector.example.com')).toThrow(/https/);
    expect(() => checkAppUrl('connector.example.com')).toThrow(/not a URL/);
  });
});

describe('pixel bundle', () => {
  beforeEach(() => resetSeq());

  it('is a few KB, and sends to the app URL it was built with, through the sandbox global shopify.extend', async () => {
    const bundle = await buildPixel({ appUrl: 'https://connector.example.com' });
    expect(bundle.bytes).toBeLessThan(6 * 1024);
    expect(bundle.gzipBytes).toBeLessThan(2.5 * 1024);
    expect(bundle.code).not.toMatch(/process\.env/); // replaced at build time
    const run = runBundle(bundle.code, { pixelKey: 'pk_live_1' });
    expect(run.point()).toBe('WebPixel::Render');
    run.subscribers.get('checkout_started')!(event('checkout_started', { checkout: checkout() }));
    await new Promise((r) => setImmediate(r));
    expect(run.beacons.map((b) => b.url)).toEqual(['https://connector.example.com/pixel/events']);
    expect(JSON.parse(run.beacons[0]!.body)).toMatchObject({
      v: 1,
      key: 'pk_live_1',
      customer: null,
      events: [{ name: 'checkout_started' }],
    });
  });

  it('sends to the sandbox app when built without an app URL', async () => {
    const bundle = await buildPixel();
    const run = runBundle(bundle.code, { pixelKey: 'pk_test_1' });
    run.subscribers.get('checkout_started')!(event('checkout_started', { checkout: checkout() }));
    expect(run.beacons.map((b) => b.url)).toEqual(['http://localhost:3000/pixel/events']);
  });
});

describe('shopify.extension.toml', () => {
  const toml = fs.readFileSync(path.join(EXT, 'shopify.extension.toml'), 'utf8');

  it('is a strict web pixel needing analytics and marketing consent, no preferences, no sale of data', () => {
    expect(toml).toMatch(/^type = "web_pixel_extension"$/m);
    expect(toml).toMatch(/^name = "email-pixel"$/m);
    expect(toml).toMatch(/^runtime_context = "strict"$/m);
    const privacy = toml.split('[customer_privacy]')[1]!.split(/^\[/m)[0]!;
    expect(privacy).toMatch(/^analytics = true$/m);
    expect(privacy).toMatch(/^marketing = true$/m);
    expect(privacy).toMatch(/^preferences = false$/m);
    expect(privacy).toMatch(/^sale_of_data = "disabled"$/m);
  });

  it('has exactly one setting, the pixel key the source reads', () => {
    expect(toml).toMatch(/^\[settings\]\ntype = "object"$/m);
    expect(toml.match(/^\[settings\.fields\.[^\]]+\]$/gm)).toEqual(['[settings.fields.pixelKey]']);
    const field = toml.split('[settings.fields.pixelKey]')[1]!;
    expect(field).toMatch(/^type = "single_line_text_field"$/m);
    expect(field).toMatch(/^name = ".+"$/m);
    expect(field).toMatch(/^description = ".+"$/m);
    expect(fs.readFileSync(path.join(EXT, 'src', 'pixel.ts'), 'utf8')).toContain('api.settings.pixelKey');
  });
});
