// What the notify-me form learns from Shopify: the answers of productVariant(id:) and
// customer(id:) read exactly, and a logged-in customer's email taken from what the app keeps
// before the Admin API is asked.
import type { CustomerEmailLookup } from '../../../src/integrations/shopify/customer-email';
import { parseCustomerEmail } from '../../../src/integrations/shopify/customer-email';
import { parseVariant } from '../../../src/integrations/shopify/variant-lookup';
import { customerEmails } from '../../../src/notify-me/customer-emails';

describe('notify-me look-ups', () => {
  it("reads productVariant(id:): the variant's product and whether it can be bought, or unknown", () => {
    const data = {
      productVariant: {
        id: 'gid://shopify/ProductVariant/45105',
        title: 'Small',
        price: '16.00',
        availableForSale: false,
        product: { id: 'gid://shopify/Product/8105', title: 'Merino Socks' },
      },
    };
    expect(parseVariant('45105', data)).toEqual({
      kind: 'found',
      variant: { variantId: '45105', productId: '8105', title: 'Small', productTitle: 'Merino Socks', availableForSale: false, price: 16 },
    });
    expect(parseVariant('45105', { productVariant: { ...data.productVariant, availableForSale: true } })).toMatchObject({
      variant: { availableForSale: true },
    });
    expect(parseVariant('45105', { productVariant: null })).toEqual({ kind: 'unknown' });
    expect(parseVariant('45105', undefined)).toEqual({ kind: 'unknown' });
    // another variant's answer, or a node of another type, is no answer for this one
    expect(parseVariant('45106', data)).toEqual({ kind: 'unknown' });
    expect(parseVariant('45105', { productVariant: { ...data.productVariant, id: 'gid://shopify/Product/45105' } })).toEqual({
      kind: 'unknown',
    });
    expect(parseVariant('45105', { productVariant: { ...data.productVariant, product: null } })).toEqual({ kind: 'unknown' });
  });

  it('reads customer(id:): the default email, normalised; none; or no such customer', () => {
    const customer = (email: unknown) => ({
      customer: { id: 'gid://shopify/Customer/5551', defaultEmailAddress: email === undefined ? null : { emailAddress: email } },
    });
    expect(parseCustomerEmail('5551', customer(' Ann@Example.COM '))).toEqual({ kind: 'found', email: 'ann@example.com' });
    expect(parseCustomerEmail('5551', customer(undefined))).toEqual({ kind: 'no_email' });
    expect(parseCustomerEmail('5551', customer(''))).toEqual({ kind: 'no_email' });
    expect(parseCustomerEmail('5551', { customer: null })).toEqual({ kind: 'unknown' });
    expect(parseCustomerEmail('5552', customer('ann@example.com'))).toEqual({ kind: 'unknown' });
  });

  it("takes a customer's email from what the app keeps, and asks Shopify only when it keeps none (or an unusable one)", async () => {
    const asked: string[] = [];
    const shopify: CustomerEmailLookup = {
      emailOf: async (_shop, id) => {
        asked.push(id);
        return { kind: 'found', email: `from-shopify-${id}@example.com` };
      },
    };
    const kept: Record<string, string> = { '1': ' Kept@Example.com ', '2': 'not an address' };
    const emails = customerEmails(shopify, async (_shopId, id) => kept[id] ?? null);
    const shop = { id: 's', domain: 'demo-store.myshopify.com' };
    expect(await emails.emailOf(shop, '1', Date.now() + 1000)).toEqual({ kind: 'found', email: 'kept@example.com' });
    expect(asked).toEqual([]);
    expect(await emails.emailOf(shop, '2', Date.now() + 1000)).toEqual({ kind: 'found', email: 'from-shopify-2@example.com' });
    expect(await emails.emailOf(shop, '3', Date.now() + 1000)).toEqual({ kind: 'found', email: 'from-shopify-3@example.com' });
    const failing = customerEmails(shopify, async () => {
      throw new Error('store down');
    });
    expect(await failing.emailOf(shop, '4', Date.now() + 1000)).toEqual({ kind: 'found', email: 'from-shopify-4@example.com' });
    expect(asked).toEqual(['2', '3', '4']);
  });
});
