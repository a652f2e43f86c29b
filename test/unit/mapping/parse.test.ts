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

  it('reads a 16-digit run inside a string as text, and an id beside it exactly', () => {
    expect(parseWebhookBody('{"note":"card 4242424242424242","id":9007199254740993,"n":1.5}')).toEqual({
      note: 'card 4242424242424242',
      id: '9007199254740993',
      n: 1.5,
    });
  });

  it('keeps numbers, negative zero and __proto__ keys as lossless-json does', () => {
    const raw = '{"a":-0,"b":1e3,"c":123456789012345,"d":-0.5,"__proto__":{"x":1},"e":[1,{"f":null}]}';
    expect(parseWebhookBody(raw)).toStrictEqual(parseLossless(raw));
    expect(Object.is((parseWebhookBody(raw) as { a: number }).a, -0)).toBe(true);
  });
});

describe('parseWebhookBody on bodies with runs of 16 digits or more (their unsafe integers quoted, then JSON.parse)', () => {
  const fixtures = join(__dirname, '../../fixtures');
  const files = (dir: string) =>
    readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .map((f) => [f, readFileSync(join(dir, f), 'utf8')] as const);

  it.each([...files(fixtures), ...files(join(fixtures, 'quirks'))])(
    '%s, with its 18-digit ids, reads exactly as lossless-json reads it',
    (_name, raw) => {
      expect(parseWebhookBody(raw)).toStrictEqual(parseLossless(raw));
    },
  );

  it.each([
    ['unsafe integers in arrays, negative, at the end', '[9007199254740993,-9007199254740993,820982911946154508]'],
    ['a bare unsafe integer', '820982911946154508'],
    ['a safe 16-digit integer stays a number', '{"a":1000000000000000,"b":9007199254740991,"c":-9007199254740991}'],
    [
      'fractions and exponents with long runs stay numbers',
      '{"a":1.12345678901234567,"b":12345678901234567.5,"c":12345678901234567e2,"d":1e-12345678901234567,"e":12345678901234567E+1}',
    ],
    [
      'escaped quotes and backslashes before a run in a string',
      '{"a":"say \\"12345678901234567\\" and \\\\","b":12345678901234567,"c":"\\\\\\"x 99999999999999999"}',
    ],
    ['whitespace around', '{ "id" :\n 820982911946154508 \r\n, "x":[ 820982911946154509\t] }'],
    ['unicode before a run', '{"name":"Zoë 🚀 \\u00e9","id":820982911946154508}'],
  ])('%s: as lossless-json reads it', (_label, raw) => {
    expect(parseWebhookBody(raw)).toStrictEqual(parseLossless(raw));
  });

  it.each([
    ['an unsafe integer as an object key', '{820982911946154508:1}'],
    ['one after a comma in key position', '{"a":1,820982911946154508 :2}'],
    ['a leading zero', '{"id":0820982911946154508}'],
    ['an unterminated string before a run', '{"a":"x 820982911946154508}'],
    ['two values with no comma', '[820982911946154508 820982911946154509]'],
  ])('%s is refused, as lossless-json refuses it', (_label, raw) => {
    expect(() => parseLossless(raw)).toThrow();
    expect(() => parseWebhookBody(raw)).toThrow(InvalidJsonError);
  });

  it('reads a 1.8 MB order of 10,000 line items with 18-digit ids exactly as lossless-json', () => {
    const items = Array.from(
      { length: 10_000 },
      (_, i) =>
        `{"id":${866550311766439020n + BigInt(i * 7)},"product_id":788032119674292922,"title":"Notebook ${i}","quantity":${(i % 5) + 1},"price":"4.50"}`,
    );
    const raw = `{"id":820982911946154508,"line_items":[${items.join(',')}]}`;
    // its speed is what the big-order test measures, as the event loop's longest stall
    expect(parseWebhookBody(raw)).toStrictEqual(parseLossless(raw));
  });
});
