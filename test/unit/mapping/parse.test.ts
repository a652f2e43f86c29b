import { InvalidJsonError, parseWebhookBody } from '../../../src/mapping';

describe('parseWebhookBody', () => {
  it('keeps an id above 2^53 exact, as a string, where JSON.parse would round it', () => {
    const raw = '{"id":9007199254740993,"order_id":820982911946154508}';
    expect(parseWebhookBody(raw)).toEqual({ id: '9007199254740993', order_id: '820982911946154508' });
    expect(String((JSON.parse(raw) as { id: number }).id)).toBe('9007199254740992');
  });

  it('leaves safe integers and decimals as numbers', () => {
    expect(parseWebhookBody('{"id":632910392,"rate":0.08,"neg":-5,"max":9007199254740991}')).toEqual({
      id: 632910392,
      rate: 0.08,
      neg: -5,
      max: 9007199254740991,
    });
  });

  it('parses nested arrays of large ids', () => {
    expect(parseWebhookBody('{"orders_to_redact":[820982911946154508,1]}')).toEqual({ orders_to_redact: ['820982911946154508', 1] });
  });

  it('keeps the last of duplicate keys, as JSON.parse does', () => {
    expect(parseWebhookBody('{"a":1,"a":2}')).toEqual({ a: 2 });
  });

  it.each(['{bad', '', 'not json', '{"a":1}}'])('throws InvalidJsonError on %j', (raw) => {
    expect(() => parseWebhookBody(raw)).toThrow(InvalidJsonError);
    try {
      parseWebhookBody(raw);
    } catch (err) {
      expect((err as InvalidJsonError).code).toBe('invalid_json');
    }
  });
});
