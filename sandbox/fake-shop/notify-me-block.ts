// The REAL notify-me app block (extensions/notify-me/blocks/notify-me.liquid) rendered as Shopify
// renders an app block, with liquidjs: the block's settings at their schema defaults, `t` reading
// the extension's locale, the page's `product` (with `selected_or_first_available_variant`),
// `customer` (nil for a guest) and `routes`, wrapped in Shopify's app-block div. The schema's
// `javascript` and `stylesheet` assets are served from ASSET_PATH, as Shopify loads them once
// per page.
import fs from 'node:fs';
import path from 'node:path';
import { Liquid } from 'liquidjs';

export const NOTIFY_ME_DIR = path.resolve(__dirname, '..', '..', 'extensions', 'notify-me');
export const ASSET_PATH = '/_sandbox/storefront/extensions/notify-me/assets/';

export interface BlockSetting {
  id?: string;
  type: string;
  default?: unknown;
}

export interface BlockSchema {
  name: string;
  target: string;
  enabled_on?: { templates?: string[] };
  javascript?: string;
  stylesheet?: string;
  settings: BlockSetting[];
}

export interface BlockVariant {
  id: string;
  title: string;
  available: boolean;
}

export interface BlockContext {
  product: { id: string; title: string; handle: string; variants: readonly BlockVariant[] };
  /** The `variant` URL parameter; Shopify falls back to the first available variant (then the first). */
  selectedVariantId?: string | null;
  customer: { id: string; email: string } | null;
  /** `routes.root_url`: "/" or a locale's "/fr". */
  rootUrl?: string;
  blockId?: string;
}

const SCHEMA = /{%-?\s*schema\s*-?%}([\s\S]*?){%-?\s*endschema\s*-?%}/;

/** The block's Liquid without its schema, and the schema itself (what Shopify reads from the file). */
export function readBlock(): { template: string; schema: BlockSchema; locale: Record<string, unknown> } {
  const source = fs.readFileSync(path.join(NOTIFY_ME_DIR, 'blocks', 'notify-me.liquid'), 'utf8');
  const m = SCHEMA.exec(source);
  if (!m) throw new Error('notify-me.liquid has no {% schema %}');
  const locale = JSON.parse(fs.readFileSync(path.join(NOTIFY_ME_DIR, 'locales', 'en.default.json'), 'utf8')) as Record<string, unknown>;
  return { template: source.replace(SCHEMA, ''), schema: JSON.parse(m[1]!) as BlockSchema, locale };
}

function lookup(locale: Record<string, unknown>, key: string): string {
  let v: unknown = locale;
  for (const part of key.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[part] : undefined;
  return typeof v === 'string' ? v : `translation missing: en.${key}`;
}

export interface NotifyMeBlock {
  /** The block's HTML for a product page. */
  render(ctx: BlockContext): string;
  /** The tags Shopify puts in the page's head for the block's assets. */
  head(): string;
  /** An asset's file, when the extension has one by that name. */
  asset(name: string): { file: string; type: string } | null;
}

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

export function notifyMeBlock(): NotifyMeBlock {
  const { template, schema, locale } = readBlock();
  const engine = new Liquid({ strictFilters: true });
  engine.registerFilter('t', (key: string) => lookup(locale, String(key)));
  const parsed = engine.parse(template);
  const settings = Object.fromEntries(schema.settings.filter((s) => s.id).map((s) => [s.id!, s.default ?? '']));
  let blocks = 0;
  return {
    render(ctx) {
      const variants = ctx.product.variants.map((v) => ({ ...v, id: Number(v.id) }));
      const selected =
        variants.find((v) => String(v.id) === ctx.selectedVariantId) ?? variants.find((v) => v.available) ?? variants[0] ?? null;
      const id = ctx.blockId ?? `AbCdEf${++blocks}`;
      const html = engine.renderSync(parsed, {
        block: { id, settings, shopify_attributes: '' },
        product: { ...ctx.product, id: Number(ctx.product.id), variants, selected_or_first_available_variant: selected },
        customer: ctx.customer,
        routes: { root_url: ctx.rootUrl ?? '/' },
      }) as string;
      return `<div id="shopify-block-${id}" class="shopify-block shopify-app-block">${html}</div>`;
    },
    head() {
      return [
        schema.stylesheet ? `<link rel="stylesheet" href="${ASSET_PATH}${schema.stylesheet}">` : '',
        schema.javascript ? `<script src="${ASSET_PATH}${schema.javascript}" defer></script>` : '',
      ].join('\n');
    },
    asset(name) {
      if (!/^[a-z0-9-]+\.(js|css)$/.test(name)) return null;
      const file = path.join(NOTIFY_ME_DIR, 'assets', name);
      return fs.existsSync(file) ? { file, type: TYPES[path.extname(name)]! } : null;
    },
  };
}
