// Every line item of order, checkout and shipping events carries the product's image, link and
// handle, from the lookup the intake made before mapping (src/integrations/shopify/products.ts).
import { mapWebhook } from '../../../src/mapping';
import type { ProductLookup } from '../../../src/mapping/items';
import { fixture, input } from './helpers';

const lookup: ProductLookup = (productId, variantId) => {
  if (productId === '788032119674292922') {
    return {
      image_url: variantId === '49148385' ? 'https://cdn.example/beanie-charcoal.png' : 'https://cdn.example/beanie.png',
      product_url: 'https://shop.example/products/merino-beanie',
      product_handle: 'merino-beanie',
    };
  }
  return null;
};

describe('product fields of line items', () => {
  it('are added to order events from the lookup, and null for products it does not know', () => {
    const [m] = mapWebhook(input('orders/create', fixture('orders-create'), { products: lookup })).messages;
    const items = m?.body.event_attribute.line_items as Array<Record<string, unknown>>;
    expect(items[0]).toMatchObject({
      product_id: '788032119674292922',
      image_url: 'https://cdn.example/beanie-charcoal.png',
      product_url: 'https://shop.example/products/merino-beanie',
      product_handle: 'merino-beanie',
    });
    expect(items[1]).toMatchObject({ product_id: '632910392', image_url: null, product_url: null, product_handle: null });
  });

  it('are added to checkout events and kept in the stored order summary (for later shipping events)', () => {
    const out = mapWebhook(input('checkouts/create', fixture('checkouts-create'), { products: lookup }));
    expect((out.messages[0]?.body.event_attribute.line_items as Array<Record<string, unknown>>)[0]).toMatchObject({
      product_handle: 'merino-beanie',
    });
    const order = mapWebhook(input('orders/paid', fixture('orders-paid'), { products: lookup }));
    expect(order.orderSummary?.lineItems[0]).toMatchObject({ image_url: 'https://cdn.example/beanie-charcoal.png' });
  });

  it('are added to shipping events from the fulfillment payload', () => {
    const out = mapWebhook(
      input('fulfillments/create', fixture('fulfillments-create'), { products: lookup, orderEmail: 'jane.okafor@example.com' }),
    );
    const items = out.messages[0]?.body.event_attribute.line_items as Array<Record<string, unknown>>;
    expect(items.find((i) => i.product_id === '788032119674292922')).toMatchObject({
      product_url: 'https://shop.example/products/merino-beanie',
    });
  });
});
