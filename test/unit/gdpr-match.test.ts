// Which records a privacy request (customers/redact, customers/data_request) matches: exact
// email, customer id and order ids, never a substring, a LIKE wildcard or a number that only
// looks like an id (issue 35).
import fs from 'node:fs';
import path from 'node:path';
import { parseWebhookBody } from '../../src/mapping';
import { customerRef, payloadConcerns, receiptConcerns, textNamesEmail, type CustomerRef } from '../../src/processing/privacy/gdpr-match';

const fixture = (name: string) => fs.readFileSync(path.join(__dirname, '..', 'fixtures', `${name}.json`), 'utf8');
const ann: CustomerRef = { id: '1234', email: 'ann@gmail.com', emails: ['ann@gmail.com'], orderIds: ['2345'] };
const byEmail = (email: string): CustomerRef => ({ id: null, email, emails: [email], orderIds: [] });
const noDevices = new Set<string>();

describe('customerRef', () => {
  it('reads the customer of a compliance payload: email trimmed and lower-cased, ids past 2^53 exact', () => {
    expect(customerRef(parseWebhookBody(fixture('customers-redact')), 'orders_to_redact')).toEqual({
      id: '9007199254740993',
      email: 'jane.okafor@example.com',
      emails: ['jane.okafor@example.com'],
      orderIds: ['820982911946154508', '820982911946154509'],
    });
    expect(customerRef({ customer: { id: 7, email: '  Ann@Gmail.COM ' }, orders_requested: [1, 'x', null] }, 'orders_requested')).toEqual({
      id: '7',
      email: 'ann@gmail.com',
      emails: ['ann@gmail.com'],
      orderIds: ['1', 'x'],
    });
    expect(customerRef({ customer: { email: '' } }, 'orders_to_redact')).toEqual({ id: null, email: null, emails: [], orderIds: [] });
  });
});

describe('payloadConcerns', () => {
  it('matches a string equal to the email, in any case and with spaces around it, anywhere in the payload', () => {
    expect(payloadConcerns({ email: 'ann@gmail.com' }, ann)).toBe(true);
    expect(payloadConcerns({ customer: { email: ' ANN@Gmail.com ' } }, ann)).toBe(true);
    expect(payloadConcerns({ billing_address: { notes: ['x', 'Ann@gmail.com'] } }, ann)).toBe(true);
  });

  it('never matches an address that only contains the email, or matches it as a LIKE pattern', () => {
    expect(payloadConcerns({ email: 'joann@gmail.com', contact_email: 'ann@gmail.com.au' }, ann)).toBe(false);
    expect(payloadConcerns({ note: 'please write to ann@gmail.com' }, byEmail('ann@gmail.com'))).toBe(false);
    expect(payloadConcerns({ email: 'axb@example.com' }, byEmail('a_b@example.com'))).toBe(false);
    expect(payloadConcerns({ email: 'axxb@example.com' }, byEmail('a%b@example.com'))).toBe(false);
    expect(payloadConcerns({ email: 'a%b@example.com' }, byEmail('a%b@example.com'))).toBe(true);
  });

  it('matches the customer id where a payload names a customer, and only the whole id', () => {
    expect(payloadConcerns({ customer: { id: 1234 } }, ann)).toBe(true);
    expect(payloadConcerns({ customer: { id: 12345 } }, ann)).toBe(false);
    expect(payloadConcerns({ customer: { id: 123 } }, ann)).toBe(false);
    expect(payloadConcerns({ refund: { customer_id: '1234' } }, ann)).toBe(true);
    expect(payloadConcerns({ events: [{ sent: { shopify_customer_id: '1234' } }] }, ann)).toBe(true);
    expect(payloadConcerns({ customer: { admin_graphql_api_id: 'gid://shopify/Customer/1234' } }, ann)).toBe(true);
    expect(payloadConcerns({ owner: 'gid://shopify/Customer/12345' }, ann)).toBe(false);
    // the top-level object is the customer only on customers/* topics
    expect(payloadConcerns({ id: 1234 }, ann, 'customers/update')).toBe(true);
    expect(payloadConcerns({ id: 1234 }, ann, 'checkouts/create')).toBe(false);
  });

  it('matches an order id where a payload names an order, and only the whole id', () => {
    expect(payloadConcerns({ id: 2345 }, ann, 'orders/paid')).toBe(true);
    expect(payloadConcerns({ id: 23456 }, ann, 'orders/paid')).toBe(false);
    expect(payloadConcerns({ id: 5, order_id: 2345 }, ann, 'refunds/create')).toBe(true);
    expect(payloadConcerns({ id: 5, order_id: 23456 }, ann, 'fulfillments/create')).toBe(false);
    expect(payloadConcerns({ orders: [{ orderId: '2345' }] }, ann)).toBe(true);
    expect(payloadConcerns({ order: { id: 2345 } }, ann)).toBe(true);
    expect(payloadConcerns({ orders_requested: [1, 2345] }, ann)).toBe(true);
    expect(payloadConcerns({ line_items: [{ admin_graphql_api_id: 'gid://shopify/Order/2345' }] }, ann)).toBe(true);
  });

  it('never takes a number elsewhere for an id: quantities, order numbers, prices, phones, other objects’ ids', () => {
    const order = {
      id: 99,
      order_number: 1234,
      name: '#2345',
      total_price: '1234.00',
      phone: '+1 555 1234',
      line_items: [{ id: 1234, product_id: 2345, quantity: 1234 }],
      customer: { id: 77, default_address: { id: 2345, zip: '1234' } },
    };
    expect(payloadConcerns(order, ann, 'orders/create')).toBe(false);
  });

  it('compares ids past 2^53 by their exact digits', () => {
    const ref: CustomerRef = { id: '9007199254740993', email: null, emails: [], orderIds: [] };
    expect(payloadConcerns(parseWebhookBody('{"customer":{"id":9007199254740993}}'), ref)).toBe(true);
    expect(payloadConcerns(parseWebhookBody('{"customer":{"id":9007199254740992}}'), ref)).toBe(false);
  });

  it('matches nothing for a customer named by nothing', () => {
    expect(payloadConcerns({ email: '', customer: { id: null } }, { id: null, email: null, emails: [], orderIds: [] })).toBe(false);
  });
});

describe('receiptConcerns', () => {
  const webhook = (topic: string, payload: unknown) => ({ topic, kind: 'webhook', body: JSON.stringify(payload) });
  const pixel = (clientId: string, email: string | null) => ({
    topic: 'pixel/events',
    kind: 'pixel',
    body: JSON.stringify({ v: 1, key: 'k', client_id: clientId, customer: email ? { email } : null, events: [] }),
  });

  it('reads the raw body: an order of the customer matches, the same order shape of another customer does not', () => {
    expect(receiptConcerns(webhook('orders/paid', { id: 2345, email: 'ann@gmail.com' }), ann, noDevices)).toBe(true);
    expect(receiptConcerns(webhook('orders/paid', { id: 23456, email: 'joann@gmail.com', customer: { id: 12345 } }), ann, noDevices)).toBe(
      false,
    );
  });

  it('matches a storefront batch by the email it gives, or by a device tied to the customer', () => {
    expect(receiptConcerns(pixel('c-1', 'Ann@Gmail.com'), ann, noDevices)).toBe(true);
    expect(receiptConcerns(pixel('c-1', 'joann@gmail.com'), ann, noDevices)).toBe(false);
    expect(receiptConcerns(pixel('c-1', null), ann, new Set(['c-1']))).toBe(true);
    expect(receiptConcerns(pixel('c-10', null), ann, new Set(['c-1']))).toBe(false);
  });

  it('a body that is not JSON, or no body, concerns nobody', () => {
    expect(receiptConcerns({ topic: 'orders/paid', kind: 'webhook', body: 'ann@gmail.com' }, ann, noDevices)).toBe(false);
    expect(receiptConcerns({ topic: 'orders/paid', kind: 'webhook', body: null }, ann, noDevices)).toBe(false);
  });
});

describe('textNamesEmail', () => {
  it.each([
    ['Invalid contact ann@gmail.com', true],
    ['Invalid contact ANN@Gmail.Com.', true],
    ['contact <ann@gmail.com> refused', true],
    ['"ann@gmail.com": blocked', true],
    ['ann@gmail.com', true],
    ['Invalid contact joann@gmail.com', false],
    ['Invalid contact jo.ann@gmail.com', false],
    ['Invalid contact ann@gmail.community', false],
    ['Invalid contact ann@gmail.com.au', false],
    ['Invalid contact ann@gmail.com-mail.net', false],
    ['no address here', false],
  ])('%j names ann@gmail.com: %s', (text, expected) => {
    expect(textNamesEmail(text, 'ann@gmail.com')).toBe(expected);
  });

  it('reads `_` and `%` as the characters they are', () => {
    expect(textNamesEmail('Invalid contact axb@example.com', 'a_b@example.com')).toBe(false);
    expect(textNamesEmail('Invalid contact axxb@example.com', 'a%b@example.com')).toBe(false);
    expect(textNamesEmail('Invalid contact a%b@example.com', 'a%b@example.com')).toBe(true);
  });
});
