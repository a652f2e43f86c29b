import { DEFAULT_SETTINGS, mergeChoices, mergeSettings, parseStoredSettings, readStoredChoices } from '../../../src/settings/settings';

describe('a shop’s stored settings', () => {
  it('keeps every readable choice when one stored value no longer fits its range', () => {
    const stored = JSON.stringify({
      events: { viewed_product: false, no_such_event: true, order_paid: 'yes' },
      storefront_events_per_email_day: 10_000_000, // a range that has since narrowed
      cart_abandonment_delay_minutes: 90,
      price_drop_threshold_percent: 15,
    });
    expect(readStoredChoices(stored)).toEqual({
      events: { viewed_product: false },
      cart_abandonment_delay_minutes: 90,
      price_drop_threshold_percent: 15,
    });
    const settings = parseStoredSettings(stored);
    expect(settings.events.viewed_product).toBe(false);
    expect(settings.events.order_paid).toBe(true);
    expect(settings.storefront_events_per_email_day).toBe(DEFAULT_SETTINGS.storefront_events_per_email_day);
    expect(settings.cart_abandonment_delay_minutes).toBe(90);
  });

  it('reads nothing from a blob that is not JSON or not an object', () => {
    expect(readStoredChoices('{not json')).toEqual({});
    expect(readStoredChoices('42')).toEqual({});
    expect(readStoredChoices(null)).toEqual({});
    expect(parseStoredSettings('{not json')).toEqual(DEFAULT_SETTINGS);
  });

  it('stores the merchant’s choices only, so a default the operator changes still reaches the rest', () => {
    const first = mergeChoices({}, { events: { viewed_product: false } });
    const second = mergeChoices(first, { events: { added_to_cart: false }, browse_abandonment_delay_minutes: 30 });
    expect(second).toEqual({ events: { viewed_product: false, added_to_cart: false }, browse_abandonment_delay_minutes: 30 });

    const operatorDefaults = mergeSettings(DEFAULT_SETTINGS, { storefront_events_per_email_day: 500 });
    const settings = parseStoredSettings(JSON.stringify(second), operatorDefaults);
    expect(settings.storefront_events_per_email_day).toBe(500);
    expect(settings.browse_abandonment_delay_minutes).toBe(30);
    expect(settings.events).toMatchObject({ viewed_product: false, added_to_cart: false, order_placed: true });
  });
});
