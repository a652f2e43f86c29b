// The pure parts behind product images, optional scopes and Shopify's cost limits.
import { readCost, restoreWaitMs, ThrottleTracker } from '../../../src/integrations/shopify/admin-graphql';
import {
  fieldsFor,
  fromLookup,
  parseProductDelete,
  parseProductUpdate,
  productUrl,
  withProductFields,
} from '../../../src/integrations/shopify/product-cache';
import { gidNumber, parseLookup } from '../../../src/integrations/shopify/product-query';
import { FEATURE_SCOPES, hasScopes, missingScopes, OPTIONAL_SCOPES, parseScopes } from '../../../src/integrations/shopify/scopes';
import { featuresFor } from '../../../src/admin/permissions';

describe('scopes', () => {
  it('parses a session scope string, trimmed and once each', () => {
    expect(parseScopes(' read_orders,write_pixels , read_orders,')).toEqual(['read_orders', 'write_pixels']);
    expect(parseScopes(undefined)).toEqual([]);
    expect(parseScopes(['read_products'])).toEqual(['read_products']);
  });

  it('counts a write scope as granting its read scope, never the other way', () => {
    expect(hasScopes('write_products', ['read_products'])).toBe(true);
    expect(hasScopes('read_products', ['write_products'])).toBe(false);
    expect(missingScopes('read_orders,write_pixels', FEATURE_SCOPES.storefront_pixel)).toEqual(['read_customer_events', 'read_products']);
    expect(missingScopes('write_products,write_pixels,read_customer_events', FEATURE_SCOPES.storefront_pixel)).toEqual([]);
  });

  it('declares each optional scope once, and the features they turn on', () => {
    expect(OPTIONAL_SCOPES).toEqual(['read_products', 'write_pixels', 'read_customer_events']);
    expect(featuresFor(['read_orders', 'read_products'])).toEqual([
      { feature: 'product_images', scopes: ['read_products'], granted: true, missing: [] },
      {
        feature: 'storefront_pixel',
        scopes: ['write_pixels', 'read_customer_events', 'read_products'],
        granted: false,
        missing: ['write_pixels', 'read_customer_events'],
      },
    ]);
  });
});

describe('the cost extension and throttling', () => {
  const throttled = {
    extensions: {
      cost: {
        requestedQueryCost: 102,
        actualQueryCost: null,
        throttleStatus: { maximumAvailable: 2000, currentlyAvailable: 2, restoreRate: 100 },
      },
    },
  };

  it('reads the cost and computes the wait until the requested cost is restored', () => {
    const cost = readCost(throttled);
    expect(cost).toEqual({
      requestedQueryCost: 102,
      actualQueryCost: null,
      throttleStatus: { maximumAvailable: 2000, currentlyAvailable: 2, restoreRate: 100 },
    });
    expect(restoreWaitMs(cost)).toBe(1000);
    expect(restoreWaitMs(cost, 2)).toBe(0);
    // a query costing more than the bucket holds never fits: waiting is pointless
    expect(restoreWaitMs(cost, 2001)).toBeNull();
    expect(readCost({ data: {} })).toBeNull();
  });

  it('estimates a shop bucket from the last answer, restoring over time', () => {
    let t = 0;
    const tracker = new ThrottleTracker(() => t);
    expect(tracker.waitMs('s', 50)).toBe(0);
    tracker.observe('s', readCost(throttled));
    expect(tracker.waitMs('s', 52)).toBe(500);
    t = 300;
    expect(tracker.waitMs('s', 52)).toBe(200);
    t = 600;
    expect(tracker.waitMs('s', 52)).toBe(0);
  });
});

describe('product cache entries', () => {
  const domain = 'https://shop.example';

  it('parses a nodes answer by exact id, a missing node meaning no such product', () => {
    const big = '9007199254740993'; // 2^53 + 1: must not go through a JS number
    expect(gidNumber(`gid://shopify/Product/${big}`)).toBe(big);
    const lookup = parseLookup([big, '2'], ['31'], {
      shop: { primaryDomain: { url: 'https://shop.example/' }, currencyCode: 'EUR' },
      nodes: [
        {
          __typename: 'Product',
          id: `gid://shopify/Product/${big}`,
          handle: 'linen-shirt',
          title: 'Linen Shirt',
          onlineStoreUrl: 'https://shop.example/products/linen-shirt',
          featuredImage: { url: 'https://cdn.example/a.png' },
        },
        null,
        {
          __typename: 'ProductVariant',
          id: 'gid://shopify/ProductVariant/31',
          title: 'M',
          sku: 'LS-M',
          price: '49.90',
          image: null,
          product: { id: `gid://shopify/Product/${big}` },
        },
      ],
    });
    expect(lookup.primaryDomain).toBe(domain);
    expect(lookup.currency).toBe('EUR');
    expect(lookup.products.get(big)).toEqual({
      handle: 'linen-shirt',
      title: 'Linen Shirt',
      onlineStoreUrl: 'https://shop.example/products/linen-shirt',
      featuredImage: 'https://cdn.example/a.png',
    });
    expect(lookup.products.get('2')).toBeNull();
    expect(lookup.variants.get('31')).toEqual({ productId: big, image: null, title: 'M', sku: 'LS-M', price: 49.9, available: null });
  });

  it('uses the variant image, else the featured image; links only products on the Online Store', () => {
    const variant = { title: 'Red', sku: null, price: 20, available: true };
    const entry = fromLookup(
      '1',
      { handle: 'tote', title: 'Tote', onlineStoreUrl: 'x', featuredImage: 'https://cdn.example/tote.png' },
      [
        ['11', { productId: '1', image: 'https://cdn.example/tote-red.png', ...variant }],
        ['12', null],
      ],
      domain,
      new Date(),
      'USD',
    );
    expect(entry).toMatchObject({ title: 'Tote', currency: 'USD', variants: { '11': variant } });
    expect(fieldsFor(entry, '11')).toEqual({
      image_url: 'https://cdn.example/tote-red.png',
      product_url: 'https://shop.example/products/tote',
      product_handle: 'tote',
    });
    expect(fieldsFor(entry, '12').image_url).toBe('https://cdn.example/tote.png');
    expect(fieldsFor(entry, null).image_url).toBe('https://cdn.example/tote.png');
    expect(fieldsFor(undefined, '11')).toEqual({ image_url: null, product_url: null, product_handle: null });
    expect(productUrl(domain, 'tote', false)).toBeNull();
    const gone = fromLookup('2', null, [], domain, new Date());
    expect(fieldsFor(gone, null)).toEqual({ image_url: null, product_url: null, product_handle: null });
  });

  it('adds the three fields to line items, keeping every other field', () => {
    const items = [{ product_id: '1', variant_id: null, title: 'Tote', quantity: 2 }];
    expect(withProductFields(items, [{ image_url: 'i', product_url: 'u', product_handle: 'h' }])).toEqual([
      { product_id: '1', variant_id: null, title: 'Tote', quantity: 2, image_url: 'i', product_url: 'u', product_handle: 'h' },
    ]);
    expect(withProductFields(items, [])[0]).toMatchObject({ image_url: null, product_url: null, product_handle: null });
  });
});

describe('products/update and products/delete payloads', () => {
  const raw = `{"id":9007199254740993,"handle":"linen-shirt","title":"Linen Shirt","status":"active","published_at":"2026-01-01T00:00:00Z",
    "image":{"id":5,"src":"https://cdn.example/front.png"},
    "images":[{"id":5,"position":1,"src":"https://cdn.example/front.png"},{"id":9007199254740995,"position":2,"src":"https://cdn.example/back.png"}],
    "variants":[{"id":9007199254740997,"image_id":9007199254740995,"title":"M","sku":"LS-M","price":"49.90"},{"id":42,"image_id":null,"title":"L","price":"52.00"}]}`;

  it('reads ids exactly from the raw body, each variant image through its image_id, and the titles and prices', () => {
    expect(parseProductUpdate(raw)).toEqual({
      productId: '9007199254740993',
      handle: 'linen-shirt',
      title: 'Linen Shirt',
      onOnlineStore: true,
      updatedAt: null,
      imageUrl: 'https://cdn.example/front.png',
      variantImages: { '9007199254740997': 'https://cdn.example/back.png', '42': null },
      variants: {
        '9007199254740997': { title: 'M', sku: 'LS-M', price: 49.9, available: null },
        '42': { title: 'L', sku: null, price: 52, available: null },
      },
    });
  });

  it('a draft or unpublished product has no page; a payload without images or variants is not enough', () => {
    expect(parseProductUpdate({ id: 1, handle: 'h', status: 'draft', images: [], variants: [] })?.onOnlineStore).toBe(false);
    expect(parseProductUpdate({ id: 1, handle: 'h', published_at: null, images: [], variants: [] })?.onOnlineStore).toBe(false);
    expect(parseProductUpdate({ id: 1, handle: 'h', variants: [] })).toBeNull();
    expect(parseProductUpdate({ id: 1, images: [], variants: [] })).toBeNull();
    expect(parseProductDelete('{"id":9007199254740993}')).toBe('9007199254740993');
    expect(parseProductDelete('not json')).toBeNull();
  });
});
