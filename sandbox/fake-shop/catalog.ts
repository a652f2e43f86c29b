// The fake shop's products for the Admin API: `nodes(ids:)` over Product and ProductVariant gids
// (handle, title, onlineStoreUrl, featuredImage; variant title, SKU, price, image) and
// `shop { primaryDomain { url } currencyCode }`, behind the read_products scope and the cost
// bucket. Every shop starts with the products the sample orders and checkouts of
// sandbox/samples.ts reference (product 8000000000 + k, variant 9000000000 + k) and those of
// the sandbox storefront (storefront-data.ts); tests add their own. Images are small SVGs served by
// the fake shop.
import { Router } from 'express';
import type { GraphqlHandler } from './graphql';
import type { FakeShopState } from './state';
import { accessDenied, grants, type CostBuckets } from './cost';
import { CATALOG, CURRENCY, variantsOf } from './storefront-data';

export interface FakeVariantInit {
  id: string;
  /** The variant's own image URL; null or absent: none. */
  image?: string | null;
  /** Default "Default Title", as Shopify names a product's only variant. */
  title?: string;
  sku?: string | null;
  /** In the shop's currency; default 10. */
  price?: number;
}

export interface FakeProductInit {
  /** Numeric id (the gid is gid://shopify/Product/{id}). */
  id: string;
  handle: string;
  title?: string;
  /** Featured image URL; null: the product has no image. */
  image?: string | null;
  /** On the Online Store (has a product page). Default true. */
  published?: boolean;
  variants?: FakeVariantInit[];
}

const SAMPLE_TITLES = ['Linen Shirt', 'Canvas Tote', 'Wool Beanie', 'Trail Socks'];
const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');

/** The products of the sample payloads (the Canvas Tote's variant has an image of its own), and the storefront's. */
export function sampleProducts(origin: string): FakeProductInit[] {
  const samples = SAMPLE_TITLES.map((title, k) => {
    const handle = slug(title);
    return {
      id: String(8_000_000_000 + k),
      handle,
      title,
      image: `${origin}/_sandbox/product-images/${handle}.svg`,
      variants: [
        {
          id: String(9_000_000_000 + k),
          image: k === 1 ? `${origin}/_sandbox/product-images/${handle}-natural.svg` : null,
          sku: `SKU-${k}`,
          price: 12 + k,
        },
      ],
    };
  });
  const storefront = CATALOG.map((p) => ({
    id: p.productId,
    handle: p.handle,
    title: p.title,
    image: `${origin}/_sandbox/product-images/${p.handle}.svg`,
    variants: variantsOf(p).map((v) => ({ id: v.id, title: v.title, sku: v.sku, price: p.price })),
  }));
  return [...samples, ...storefront];
}

export class FakeCatalog {
  private readonly byShop = new Map<string, Map<string, FakeProductInit>>();
  private readonly asked = new Map<string, Array<{ ids: string[] }>>();

  /** The nodes(ids:) calls the shop answered with data (not throttled), in order. */
  lookups(shop: string): Array<{ ids: string[] }> {
    return [...(this.asked.get(shop) ?? [])];
  }

  answered(shop: string, ids: string[]): void {
    this.asked.set(shop, [...(this.asked.get(shop) ?? []), { ids }]);
  }

  constructor(private readonly seed: () => FakeProductInit[]) {}

  products(shop: string): Map<string, FakeProductInit> {
    let m = this.byShop.get(shop);
    if (!m) {
      m = new Map(this.seed().map((p) => [p.id, p]));
      this.byShop.set(shop, m);
    }
    return m;
  }

  add(shop: string, product: FakeProductInit): void {
    this.products(shop).set(product.id, product);
  }

  remove(shop: string, productId: string): boolean {
    return this.products(shop).delete(productId);
  }

  variant(shop: string, variantId: string): { product: FakeProductInit; variant: FakeVariantInit } | undefined {
    for (const product of this.products(shop).values()) {
      const variant = product.variants?.find((v) => v.id === variantId);
      if (variant) return { product, variant };
    }
    return undefined;
  }
}

const GID = /^gid:\/\/shopify\/(Product|ProductVariant)\/(\d+)$/;

export function catalogHandler(
  state: FakeShopState,
  catalog: FakeCatalog,
  costs: CostBuckets,
  available: (shop: string, variantId: string) => boolean = () => true,
): GraphqlHandler {
  return ({ shop, query, variables }) => {
    if (!/\bnodes\s*\(/.test(query)) return undefined;
    const ids = Array.isArray(variables.ids) ? variables.ids.map(String) : [];
    if (ids.length > 250) {
      return { errors: [{ message: 'The ids argument accepts at most 250 ids.', extensions: { code: 'MAX_INPUT_SIZE_EXCEEDED' } }] };
    }
    if (!grants(state.scopesOf(shop.domain), 'read_products')) return accessDenied('nodes', 'read_products');
    const domain = state.primaryDomainOf(shop.domain);
    const node = (gid: string) => {
      const m = GID.exec(gid);
      if (!m) return null;
      if (m[1] === 'Product') {
        const p = catalog.products(shop.domain).get(m[2]!);
        if (!p) return null;
        const published = p.published ?? true;
        return {
          __typename: 'Product',
          id: gid,
          handle: p.handle,
          title: p.title ?? p.handle,
          onlineStoreUrl: published ? `${domain}/products/${p.handle}` : null,
          featuredImage: p.image ? { url: p.image } : null,
        };
      }
      const found = catalog.variant(shop.domain, m[2]!);
      if (!found) return null;
      const v = found.variant;
      return {
        __typename: 'ProductVariant',
        id: gid,
        title: v.title ?? 'Default Title',
        sku: v.sku ?? null,
        price: (v.price ?? 10).toFixed(2),
        availableForSale: available(shop.domain, v.id),
        image: v.image ? { url: v.image } : null,
        product: { id: `gid://shopify/Product/${found.product.id}` },
      };
    };
    // about one point per object asked, as Shopify's cost model
    return costs.charge(shop.domain, 2 + ids.length * 2, () => {
      catalog.answered(shop.domain, ids);
      return {
        data: {
          ...(/\bshop\s*\{/.test(query) ? { shop: { primaryDomain: { url: domain }, currencyCode: CURRENCY } } : {}),
          nodes: ids.map(node),
        },
      };
    });
  };
}

/** The sample products' images: an SVG tile with the product's name. */
export function productImageRoutes(): Router {
  const r = Router();
  r.get('/_sandbox/product-images/:name', (req, res) => {
    const name = String(req.params.name).replace(/\.svg$/, '');
    if (!/^[a-z0-9-]{1,60}$/.test(name)) return res.status(404).end();
    const label = name.replace(/-/g, ' ');
    const hue = [...name].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 360, 7);
    res
      .type('image/svg+xml')
      .set('Cache-Control', 'public, max-age=86400')
      .send(
        `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="400" viewBox="0 0 400 400"><rect width="400" height="400" fill="hsl(${hue},45%,82%)"/><text x="200" y="210" font-family="sans-serif" font-size="28" text-anchor="middle" fill="#333">${label}</text></svg>`,
      );
  });
  return r;
}
