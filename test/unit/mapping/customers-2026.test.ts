// Customers as Shopify 2026-10 sends them: the customer payload carries no consent, tags or
// order counts; those arrive on topics of their own, in any order, and can repeat. The mappers
// merge each fact into the customer's profile by its own time and every event carries the result.
import { consentState, mapWebhook, type CustomerProfile, type MapInput, type MapOutput } from '../../../src/mapping';
import { PROFILE_UPDATE_DELAY_MS } from '../../../src/mapping/customers';
import { fixture, input, RECEIVED_AT, settingsWith, SHOP, WEBHOOK_ID } from './helpers';

const AMARA = '7300000000000000001';
const EMAIL = 'amara.nwosu@example.com';
const f = (name: string) => fixture(`2026-10/${name}`);

/** Receipts of one customer in arrival order, each seeing the profile the ones before it left. */
function customerStream(start: CustomerProfile | null = null) {
  let profile = start;
  return {
    get profile() {
      return profile;
    },
    map(topic: string, payload: unknown, over: Partial<MapInput> = {}): MapOutput {
      const out = mapWebhook(input(topic, payload, { profile, ...over }));
      if (out.profile) profile = out.profile;
      return out;
    },
  };
}

const names = (out: MapOutput) => out.messages.map((m) => m.eventName);

describe('customers/create at 2026-10', () => {
  it('sends customer_created with what the payload has, and no consent it does not carry', () => {
    const out = customerStream().map('customers/create', f('customers-create'));
    expect(names(out)).toEqual(['customer_created']);
    expect(out.messages[0]!.body).toEqual({
      event_name: 'customer_created',
      email: EMAIL,
      first_name: 'Amara',
      last_name: 'Nwosu',
      phone: '+14165550142',
      shopify_customer_id: AMARA,
      city: 'Ottawa',
      country_code: 'CA',
      province_code: 'ON',
      event_attribute: { shop_domain: SHOP, source_id: WEBHOOK_ID, occurred_at: '2026-11-10T14:15:00.000Z', customer_id: AMARA },
    });
    expect(out.profile).toMatchObject({ customerId: AMARA, email: { value: EMAIL }, emailConsent: null, tagsAt: null });
  });
});

describe('customers_email_marketing_consent/update', () => {
  it('fires email_subscribed after the customer was created, with the consent time', () => {
    const s = customerStream();
    s.map('customers/create', f('customers-create'));
    const out = s.map('customers_email_marketing_consent/update', f('customers-email-marketing-consent-update'));
    expect(names(out)).toEqual(['email_subscribed']);
    expect(out.messages[0]).toMatchObject({
      email: EMAIL,
      customerId: AMARA,
      body: {
        email_marketing_state: 'subscribed',
        accepts_marketing: true,
        first_name: 'Amara',
        event_attribute: { occurred_at: '2026-11-10T14:16:30.000Z', customer_id: AMARA, email_marketing_state: 'subscribed' },
      },
    });
  });

  it('fires it when the consent arrives before the customer, who is then created subscribed, once', () => {
    const s = customerStream();
    const consent = s.map('customers_email_marketing_consent/update', f('customers-email-marketing-consent-update'));
    expect(names(consent)).toEqual(['email_subscribed']);
    expect(consent.messages[0]!.email).toBe(EMAIL);
    const created = s.map('customers/create', f('customers-create'));
    expect(names(created)).toEqual(['customer_created']);
    expect(created.messages[0]!.body).toMatchObject({ email_marketing_state: 'subscribed', accepts_marketing: true });
  });

  it('does nothing for the same consent delivered again', () => {
    const s = customerStream();
    s.map('customers_email_marketing_consent/update', f('customers-email-marketing-consent-update'));
    const again = s.map('customers_email_marketing_consent/update', f('customers-email-marketing-consent-update'));
    expect(again.messages).toEqual([]);
    expect(again.ignored).toBe('nothing newer than what is known of the customer');
  });

  it('lets no older consent win over a newer one, whatever arrives first', () => {
    const older = f('customers-email-marketing-consent-update');
    const newer = {
      ...older,
      email_marketing_consent: { state: 'unsubscribed', opt_in_level: 'confirmed_opt_in', consent_updated_at: '2026-11-18T10:00:00-05:00' },
    };
    const s = customerStream();
    s.map('customers/create', f('customers-create'));
    expect(names(s.map('customers_email_marketing_consent/update', newer))).toEqual(['email_unsubscribed']);
    const stale = s.map('customers_email_marketing_consent/update', older);
    expect(stale.messages).toEqual([]);
    expect(consentState(s.profile)).toBe('unsubscribed');
  });

  it('times a consent without consent_updated_at by X-Shopify-Triggered-At', () => {
    const p = {
      ...f('customers-email-marketing-consent-update'),
      email_marketing_consent: { state: 'subscribed', opt_in_level: null, consent_updated_at: null },
    };
    const out = customerStream().map('customers_email_marketing_consent/update', p, { triggeredAt: new Date('2026-11-10T14:20:00.000Z') });
    expect(out.messages[0]!.body.event_attribute.occurred_at).toBe('2026-11-10T14:20:00.000Z');
  });

  it('announces a change once, whichever of an older payload or the consent topic brings it', () => {
    const s = customerStream();
    s.map('customers/create', f('customers-create'));
    // an older API version's customers/update still carries the consent
    const legacy = {
      ...f('customers-create'),
      updated_at: '2026-11-10T09:16:31-05:00',
      email_marketing_consent: { state: 'subscribed', opt_in_level: 'confirmed_opt_in', consent_updated_at: '2026-11-10T09:16:30-05:00' },
    };
    expect(names(s.map('customers/update', legacy))).toContain('email_subscribed');
    expect(names(s.map('customers_email_marketing_consent/update', f('customers-email-marketing-consent-update')))).toEqual([]);
  });
});

describe('the topics no event carries: a deferred customer_updated', () => {
  const known = () => {
    const s = customerStream();
    s.map('customers/create', f('customers-create'));
    return s;
  };

  it('sends tags added as one customer_updated about a minute later, coalesced per customer', () => {
    const out = known().map('customer.tags_added', f('customer-tags-added'));
    expect(out.messages).toHaveLength(1);
    expect(out.messages[0]).toMatchObject({
      eventName: 'customer_updated',
      sourceId: `profile:${AMARA}:${WEBHOOK_ID}`,
      email: EMAIL,
      coalesce: true,
      runAt: new Date(RECEIVED_AT.getTime() + PROFILE_UPDATE_DELAY_MS),
      body: { tags: ['VIP', 'wholesale'], event_attribute: { customer_id: AMARA } },
    });
  });

  it('keeps tags by their own times: a removal that arrives before its addition still wins', () => {
    const inOrder = known();
    inOrder.map('customer.tags_added', f('customer-tags-added'));
    inOrder.map('customer.tags_removed', f('customer-tags-removed'));
    const reversed = known();
    reversed.map('customer.tags_removed', f('customer-tags-removed'));
    const added = reversed.map('customer.tags_added', f('customer-tags-added'));
    expect(added.messages[0]!.body.tags).toEqual(['VIP']);
    const later = inOrder.map('customers/update', f('customers-update'));
    expect(later.messages[0]!.body.tags).toEqual(['VIP']);
  });

  it('sends the purchasing summary as orders_count and total_spent with its currency', () => {
    const out = known().map('customers/purchasing_summary', f('customers-purchasing-summary'));
    expect(out.messages[0]!.body).toMatchObject({ orders_count: 3, total_spent: 412.85, currency: 'CAD' });
    // numberOfOrders is an UnsignedInt64: a string in GraphQL's JSON
    const asString = known().map('customers/purchasing_summary', { ...f('customers-purchasing-summary'), numberOfOrders: '3' });
    expect(asString.messages[0]!.body.orders_count).toBe(3);
  });

  it('sends SMS consent as sms_marketing_state', () => {
    const out = known().map('customers_marketing_consent/update', f('customers-marketing-consent-update'));
    expect(out.messages[0]!.body).toMatchObject({ sms_marketing_state: 'subscribed' });
  });

  it('sends nothing when no selected property changed', () => {
    const settings = settingsWith({ contact_properties: { tags: false } });
    const s = customerStream();
    s.map('customers/create', f('customers-create'), { settings });
    const out = s.map('customer.tags_added', f('customer-tags-added'), { settings });
    expect(out.messages).toEqual([]);
    expect(out.ignored).toBe('no selected property changed');
    // the fact is kept all the same: switching tags on later sends what Shopify said
    expect(out.profile?.tags).toMatchObject({ VIP: { value: true } });
  });

  it('keeps a change for a customer with no known address until their next event', () => {
    const out = customerStream().map('customer.tags_added', f('customer-tags-added'));
    expect(out.messages).toEqual([]);
    expect(out.ignored).toBe('no email known for the customer yet: kept for its next event');
    const created = mapWebhook(input('customers/create', f('customers-create'), { profile: out.profile }));
    expect(created.messages[0]!.body.tags).toEqual(['VIP', 'wholesale']);
  });
});

describe('identity continuity', () => {
  it('sends email_changed to the new address, with the previous one, and keeps both', () => {
    const s = customerStream();
    s.map('customers/create', f('customers-create'));
    const changed = s.map('customers/update', { ...f('customers-update'), email: 'amara@nwosu.ca' });
    expect(names(changed)).toEqual(['email_changed', 'customer_updated']);
    expect(changed.messages[0]).toMatchObject({
      email: 'amara@nwosu.ca',
      body: { event_attribute: { previous_email: EMAIL, customer_id: AMARA } },
    });
    expect(s.profile).toMatchObject({ email: { value: 'amara@nwosu.ca' }, formerEmails: [EMAIL] });
  });

  it('takes no older update for a change: its address and name lose to the newer ones', () => {
    const s = customerStream();
    s.map('customers/update', { ...f('customers-update'), email: 'amara@nwosu.ca' });
    const stale = s.map('customers/create', f('customers-create'));
    expect(stale.messages[0]!.email).toBe('amara@nwosu.ca');
    expect(stale.messages[0]!.body.last_name).toBe('Nwosu-Adeyemi');
    expect(names(stale)).toEqual(['customer_created']);
  });
});

describe('orders and checkouts at 2026-10', () => {
  const remembered = () => {
    const s = customerStream();
    s.map('customers/create', f('customers-create'));
    s.map('customers_email_marketing_consent/update', f('customers-email-marketing-consent-update'));
    s.map('customer.tags_added', f('customer-tags-added'));
    s.map('customers/purchasing_summary', f('customers-purchasing-summary'));
    return s;
  };

  it('gives an order the properties its own payload lacks, from what Shopify told us', () => {
    const s = remembered();
    const out = s.map('orders/create', f('orders-create'));
    expect(names(out)).toEqual(['order_placed']);
    expect(out.messages[0]!.body).toMatchObject({
      email: EMAIL,
      email_marketing_state: 'subscribed',
      accepts_marketing: true,
      tags: ['VIP', 'wholesale'],
      orders_count: 3,
      total_spent: 412.85,
      currency: 'CAD',
      first_order_at: '2026-11-20T18:05:20.000Z',
      last_order_at: '2026-11-20T18:05:20.000Z',
      locale: 'fr-CA',
    });
    expect(out.messages[0]!.checkoutToken).toBe('c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8');
    expect(out.cancelAbandoned).toEqual({ checkoutToken: 'c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8', email: EMAIL });
  });

  it('an order with no profile sends what it has, and no consent', () => {
    const body = mapWebhook(input('orders/create', f('orders-create'))).messages[0]!.body;
    expect(body).not.toHaveProperty('email_marketing_state');
    expect(body).not.toHaveProperty('tags');
    expect(body).toMatchObject({ first_name: 'Amara', city: 'Ottawa', province_code: 'ON', locale: 'fr-CA' });
  });

  it('a checkout without an id is known by its token', () => {
    const out = remembered().map('checkouts/create', f('checkouts-create'));
    expect(out.messages.map((m) => [m.eventName, m.sourceId])).toEqual([
      ['checkout_started', 'checkout:c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8:started'],
    ]);
    expect(out.upserts.map((m) => m.sourceId)).toEqual(['checkout:c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8:abandoned']);
    expect(out.messages[0]!.body.event_attribute).toMatchObject({
      checkout_id: 'c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8',
      checkout_token: 'c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8',
    });
    expect(out.messages[0]!.body).toMatchObject({ email_marketing_state: 'subscribed', tags: ['VIP', 'wholesale'] });
  });
});
