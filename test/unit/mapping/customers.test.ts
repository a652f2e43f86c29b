import { consentState, digestCustomer, mapWebhook, type MapInput } from '../../../src/mapping';
import { fixture, input, settingsWith, SHOP, WEBHOOK_ID } from './helpers';

const JANE_ID = '9007199254740993';

describe('customers/create', () => {
  const customer = fixture('customers-create');

  it('sends customer_created and email_subscribed for a customer subscribed at creation', () => {
    const out = mapWebhook(input('customers/create', customer));
    expect(out.messages.map((m) => [m.eventName, m.sourceId])).toEqual([
      ['customer_created', WEBHOOK_ID],
      ['email_subscribed', `${WEBHOOK_ID}:email_subscribed`],
    ]);
    expect(out.messages[0]?.body).toEqual({
      event_name: 'customer_created',
      email: 'jane.okafor@example.com',
      first_name: 'Jane',
      last_name: 'Okafor',
      phone: '+15035550187',
      shopify_customer_id: JANE_ID,
      email_marketing_state: 'subscribed',
      accepts_marketing: true,
      tags: ['VIP', 'newsletter'],
      city: 'Portland',
      country_code: 'US',
      // an older API version's payload: SMS consent still inside the customer
      sms_marketing_state: 'not_subscribed',
      province_code: 'OR',
      event_attribute: { shop_domain: SHOP, source_id: WEBHOOK_ID, occurred_at: '2026-03-02T14:14:51.000Z', customer_id: JANE_ID },
    });
    expect(out.messages[1]?.body.event_attribute).toEqual({
      shop_domain: SHOP,
      source_id: `${WEBHOOK_ID}:email_subscribed`,
      occurred_at: '2026-03-02T14:14:51.000Z',
      customer_id: JANE_ID,
      email_marketing_state: 'subscribed',
    });
    expect(out.customerId).toBe(JANE_ID);
    expect(out.profile).toMatchObject({ customerId: JANE_ID, sentDigest: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(consentState(out.profile!)).toBe('subscribed');
  });

  it('records a phone-only customer as skipped with the reason, keeping its state', () => {
    const out = mapWebhook(input('customers/create', fixture('customers-create-phone-only')));
    expect(out.ignored).toBe('no email on the customer');
    expect(out.messages.map((m) => [m.eventName, m.skip?.kind])).toEqual([['customer_created', 'no_email']]);
    expect(out.customerId).toBe('8124416053410');
    expect(out.profile).toMatchObject({ customerId: '8124416053410', emailConsent: null });
  });

  it('sends no consent keys and no email_subscribed when consent is null', () => {
    const out = mapWebhook(input('customers/create', fixture('customers-create-no-consent')));
    expect(out.messages.map((m) => m.eventName)).toEqual(['customer_created']);
    expect(out.messages[0]?.body).toEqual({
      event_name: 'customer_created',
      email: 'li.wei@example.com',
      first_name: 'Li',
      last_name: 'Wei',
      shopify_customer_id: '8124416053477',
      tags: [],
      event_attribute: { shop_domain: SHOP, source_id: WEBHOOK_ID, occurred_at: '2026-11-09T13:22:10.000Z', customer_id: '8124416053477' },
    });
  });
});

describe('customers/update', () => {
  const created = fixture('customers-create');
  const updated = fixture('customers-update');
  const stateAfterCreate = mapWebhook(input('customers/create', created)).profile!;
  const update = (payload: unknown, over: Partial<MapInput> = {}) => mapWebhook(input('customers/update', payload, over));

  it('sends customer_updated and email_unsubscribed when consent moves away from subscribed', () => {
    const out = update(updated, { profile: stateAfterCreate });
    expect(out.messages.map((m) => m.eventName)).toEqual(['customer_updated', 'email_unsubscribed']);
    expect(out.messages[0]?.body).toMatchObject({ email_marketing_state: 'unsubscribed', accepts_marketing: false });
    expect(out.messages[1]).toMatchObject({
      sourceId: `${WEBHOOK_ID}:email_unsubscribed`,
      body: { event_attribute: { occurred_at: '2026-11-20T23:44:09.000Z' } },
    });
    expect(consentState(out.profile!)).toBe('unsubscribed');
    expect(out.profile?.sentDigest).not.toBe(stateAfterCreate.sentDigest);
  });

  it('sends nothing when no mapped property or consent changed', () => {
    const noteOnly = { ...created, note: 'Prefers morning delivery', updated_at: '2026-05-01T10:00:00-04:00', state: 'enabled' };
    const out = update(noteOnly, { profile: stateAfterCreate });
    expect(out).toEqual({
      ignored: 'no mapped property or consent changed',
      messages: [],
      upserts: [],
      customerId: JANE_ID,
      profile: expect.objectContaining({ sentDigest: stateAfterCreate.sentDigest }),
    });
  });

  it('sends customer_updated alone when a mapped property changed', () => {
    const out = update({ ...created, last_name: 'Okafor-Reyes' }, { profile: stateAfterCreate });
    expect(out.messages.map((m) => m.eventName)).toEqual(['customer_updated']);
    expect(out.messages[0]?.body.last_name).toBe('Okafor-Reyes');
  });

  it('ignores changes to a property the merchant does not send', () => {
    const settings = settingsWith({ contact_properties: { phone: false } });
    const state = mapWebhook(input('customers/create', created, { settings })).profile!;
    expect(update({ ...created, phone: '+15035550999' }, { settings, profile: state }).ignored).toBe(
      'no mapped property or consent changed',
    );
  });

  it('sends email_subscribed when a known customer subscribes', () => {
    const before = update(updated, { profile: stateAfterCreate }).profile!;
    const resubscribed = {
      ...updated,
      email_marketing_consent: { state: 'subscribed', opt_in_level: 'confirmed_opt_in', consent_updated_at: '2026-11-22T09:00:00-05:00' },
    };
    const out = update(resubscribed, { profile: before });
    expect(out.messages.map((m) => m.eventName)).toEqual(['customer_updated', 'email_subscribed']);
  });

  it('treats a customer never seen as changed, and trusts a consent change stamped with this update', () => {
    expect(update(updated, { profile: null }).messages.map((m) => m.eventName)).toEqual(['customer_updated', 'email_unsubscribed']);
  });

  it('does not re-announce an old subscription of a customer never seen', () => {
    const old = { ...created, updated_at: '2026-11-20T18:44:10-05:00' };
    expect(update(old).messages.map((m) => m.eventName)).toEqual(['customer_updated']);
  });

  it('records a turned-off customer_updated as ignored, naming it', () => {
    const settings = settingsWith({ events: { customer_updated: false } });
    const out = update({ ...created, first_name: 'Janet' }, { settings, profile: stateAfterCreate });
    expect(out.ignored).toBe('event customer_updated is turned off');
  });

  it('records a phone-only customer as ignored with the reason', () => {
    expect(update(fixture('customers-create-phone-only')).ignored).toBe('no email on the customer');
  });
});

describe('digestCustomer', () => {
  it('does not depend on key order, and changes with consent', () => {
    const a = digestCustomer({ email: 'a@example.com', consentState: 'subscribed', properties: { first_name: 'A', tags: ['x'] } });
    const b = digestCustomer({ email: 'a@example.com', consentState: 'subscribed', properties: { tags: ['x'], first_name: 'A' } });
    const c = digestCustomer({ email: 'a@example.com', consentState: 'unsubscribed', properties: { first_name: 'A', tags: ['x'] } });
    expect(a).toBe(b);
    expect(a).not.toBe(c);
  });
});
