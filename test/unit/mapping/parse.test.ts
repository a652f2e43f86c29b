import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidJsonError, parseWebhookBody } from '../../../src/mapping';
import { parseLossless } from '../../../src/mapping/parse';

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

describe('parseWebhookBody on a body with no run of 16 digits (read by JSON.parse)', () => {
  const fixtures = join(__dirname, '../../fixtures');
  // the fixtures' 16-to-19-digit ids (Shopify's samples) cut to 13 digits, as real ids are today
  const bodies = readdirSync(fixtures)
    .filter((f) => f.endsWith('.json'))
    .map((f) => [f, readFileSync(join(fixtures, f), 'utf8').replace(/\d{16,}/g, (d) => d.slice(0, 13))] as const);

  afterEach(() => jest.restoreAllMocks());

  it.each(bodies)('%s reads exactly as lossless-json reads it', (_name, raw) => {
    const spy = jest.spyOn(JSON, 'parse');
    expect(parseWebhookBody(raw)).toStrictEqual(parseLossless(raw));
    expect(spy).toHaveBeenCalledTimes(1);
  });

  it('leaves a body with a 16-digit run to lossless-json, even inside a string', () => {
    const spy = jest.spyOn(JSON, 'parse');
    expect(parseWebhookBody('{"note":"card 4242424242424242","id":9007199254740993,"n":1.5}')).toEqual({ note: 'card 4242424242424242', id: '9007199254740993', n: 1.5 });
    expect(spy).not.toHaveBeenCalled();
  });

  it('keeps numbers, negative zero and __proto__ keys as lossless-json does', () => {
    const raw = '{"a":-0,"b":1e3,"c":123456789012345,"d":-0.5,"__proto__":{"x":1},"e":[1,{"f":null}]}';
    expect(parseWebhookBody(raw)).toStrictEqual(parseLossless(raw));
    expect(Object.is((parseWebhookBody(raw) as { a: number }).a, -0)).toBe(true);
  });
});
