// The notify-me form's body, as the block (or a theme of its own) may send it: the variant as a
// number, digits or a gid; a guest's email checked by the one rule the email service takes.
import { guestEmail, parseNotifyBody, variantIdOf } from '../../../src/notify-me/body';

describe('notify-me body', () => {
  it('takes the variant as a number, as digits or as a ProductVariant gid, exactly', () => {
    expect(parseNotifyBody({ variant_id: 45105 })).toEqual({ variantId: '45105', email: null });
    expect(parseNotifyBody({ variant_id: '45105' })).toEqual({ variantId: '45105', email: null });
    expect(parseNotifyBody({ variant_id: ' gid://shopify/ProductVariant/45105 ' })).toEqual({ variantId: '45105', email: null });
    // past 2^53 as text: kept digit for digit
    expect(variantIdOf('90071992547409931')).toBe('90071992547409931');
    expect(variantIdOf('007')).toBe('7');
  });

  it('refuses a body without a usable variant', () => {
    const bad: unknown[] = [
      null,
      'variant_id=1',
      [],
      {},
      { variant_id: '' },
      { variant_id: 0 },
      { variant_id: '0' },
      { variant_id: -3 },
      { variant_id: 1.5 },
      { variant_id: 2 ** 60 },
      { variant_id: 'gid://shopify/Product/1' },
      { variant_id: '12abc' },
      { variant_id: ['1', '2'] },
      { variant_id: { id: 1 } },
    ];
    for (const b of bad) expect([b, parseNotifyBody(b)]).toEqual([b, null]);
  });

  it('keeps the email as sent, trimmed, for the use case to check for a guest only', () => {
    expect(parseNotifyBody({ variant_id: '1', email: '  Ann@Example.COM ' })).toEqual({ variantId: '1', email: 'Ann@Example.COM' });
    expect(parseNotifyBody({ variant_id: '1', email: '   ' })).toEqual({ variantId: '1', email: null });
    expect(parseNotifyBody({ variant_id: '1', email: null })).toEqual({ variantId: '1', email: null });
    // a repeated form field or a number is text that no address matches
    expect(parseNotifyBody({ variant_id: '1', email: ['a@b.co', 'c@d.co'] })?.email).toBe('["a@b.co","c@d.co"]');
  });

  it("checks a guest's email with the service's rule, normalised", () => {
    expect(guestEmail('Ann@Example.COM')).toEqual({ ok: true, email: 'ann@example.com' });
    expect(guestEmail(null)).toEqual({ ok: false, problem: 'email_required' });
    for (const typed of [
      'ann',
      'ann@',
      'ann@example',
      'a b@example.com',
      '["a@b.co","c@d.co"]',
      `${'a'.repeat(250)}@example.com`,
      'ann@exa\u200bmple.com',
    ])
      expect([typed, guestEmail(typed)]).toEqual([typed, { ok: false, problem: 'invalid_email' }]);
  });
});
