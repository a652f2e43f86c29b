import { mapWebhook, refundAmount } from '../../../src/mapping';
import { fixture, input, SHOP, WEBHOOK_ID } from './helpers';

describe('refunds/create', () => {
  const refund = fixture('refunds-create');

  it('is recorded as skipped with a reason when neither the payload nor the intake knows the email', () => {
    const out = mapWebhook(input('refunds/create', refund));
    expect(out).toMatchObject({ ignored: 'no email on the refund', upserts: [], customerId: null });
    expect(out.messages.map((m) => [m.eventName, m.skip])).toEqual([
      ['order_refunded', { kind: 'no_email', reason: 'no email on the refund' }],
    ]);
  });

  it('sends order_refunded to the order email the intake looked up', () => {
    const out = mapWebhook(input('refunds/create', refund, { orderEmail: 'jane.okafor@example.com' }));
    expect(out.messages).toHaveLength(1);
    const [m] = out.messages;
    expect(m).toMatchObject({
      eventName: 'order_refunded',
      email: 'jane.okafor@example.com',
      orderId: '820982911946154508',
      customerId: null,
    });
    expect(m?.body).toEqual({
      event_name: 'order_refunded',
      email: 'jane.okafor@example.com',
      event_attribute: {
        shop_domain: SHOP,
        source_id: WEBHOOK_ID,
        occurred_at: '2026-11-12T16:18:27.000Z',
        order_id: '820982911946154508',
        refund_id: '509562969',
        refund_amount: 24.29,
        currency: 'USD',
      },
    });
  });

  it('prefers an email carried by the payload itself', () => {
    const out = mapWebhook(
      input(
        'refunds/create',
        { ...refund, order: { id: '820982911946154508', email: 'inline@example.com' } },
        { orderEmail: 'old@example.com' },
      ),
    );
    expect(out.messages[0]?.email).toBe('inline@example.com');
  });

  it('counts only successful refund transactions', () => {
    expect(refundAmount(refund)).toBe(24.29);
  });

  it('falls back to the refunded lines when no money moved', () => {
    expect(refundAmount({ ...refund, transactions: [] })).toBe(22.49);
  });

  it('sums amounts without float residue', () => {
    const t = { kind: 'refund', status: 'success' };
    expect(
      refundAmount({
        transactions: [
          { ...t, amount: '0.10' },
          { ...t, amount: '0.20' },
          { kind: 'sale', status: 'success', amount: '5.00' },
        ],
      }),
    ).toBe(0.3);
  });

  it('records a turned-off order_refunded as ignored', () => {
    const settings = { ...input('x', null).settings, events: { ...input('x', null).settings.events, order_refunded: false } };
    expect(mapWebhook(input('refunds/create', refund, { orderEmail: 'a@example.com', settings })).ignored).toBe(
      'event order_refunded is turned off',
    );
  });
});
