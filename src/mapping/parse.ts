// Lossless JSON parsing: Shopify ids exceed 2^53 and JSON.parse silently rounds them.
import { parse } from 'lossless-json';

export class InvalidJsonError extends Error {
  readonly code = 'invalid_json';
  constructor(message: string) {
    super(message);
    this.name = 'InvalidJsonError';
  }
}

const INTEGER = /^-?\d+$/;
// The smallest integer JSON.parse rounds, 2^53 + 1, has 16 digits: only a run of 16 digits or
// more can be one. Shopify's ids have 13 to 14 digits today; the 18-digit ids of its own samples,
// or 16 digits in a note, have such runs.
const LONG_DIGITS = /-?\d{16,}/g;

/** Integers outside the safe range become their exact decimal string; other numbers stay numbers. */
function parseNumber(text: string): number | string {
  if (INTEGER.test(text) && !Number.isSafeInteger(Number(text))) return text;
  return Number(text);
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/**
 * The text with every integer JSON.parse would round written as a string of its digits, so that
 * JSON.parse reads it as parseNumber does. Only runs of 16 digits or more outside strings are
 * looked at, found with one regular expression and the positions of the quotes before them
 * (`indexOf`): native searches over the text, with no object per token, where lossless-json
 * parses the whole body in JavaScript.
 *
 * A quoted token reads as a string wherever the number could stand, so the text's validity is
 * unchanged, except as an object key, where only a string is allowed: a token followed by `:`
 * is left alone (and JSON.parse refuses the body, as it should). Tokens that are not integers
 * (a fraction or an exponent before or after the run) or not valid numbers (a leading zero)
 * are left alone too.
 */
function quoteUnsafeIntegers(text: string): string {
  let out = '';
  let copied = 0;
  // the quote scan: the position it has reached, and whether that position is inside a string
  let scanned = 0;
  let inString = false;
  for (const m of text.matchAll(LONG_DIGITS)) {
    const start = m.index;
    for (;;) {
      const q = text.indexOf('"', scanned);
      if (q === -1 || q >= start) break;
      scanned = q + 1;
      if (inString) {
        let backslashes = 0;
        while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
        if (backslashes % 2 === 1) continue;
      }
      inString = !inString;
    }
    if (inString) continue;
    const token = m[0];
    const end = start + token.length;
    const before = text.charCodeAt(start - 1);
    const after = text.charCodeAt(end);
    // part of a fraction or an exponent (1.2345…, 1e-2345…, …5.0, …5e3)
    if (before === 0x2e || before === 0x65 || before === 0x45 || before === 0x2b || before === 0x2d || isDigit(before)) continue;
    if (after === 0x2e || after === 0x65 || after === 0x45) continue;
    // a leading zero is not a JSON number: left for JSON.parse to refuse
    if (token.charCodeAt(token[0] === '-' ? 1 : 0) === 0x30) continue;
    let next = end;
    while (isSpace(text.charCodeAt(next))) next++;
    if (text.charCodeAt(next) === 0x3a) continue;
    if (Number.isSafeInteger(Number(token))) continue;
    out += `${text.slice(copied, start)}"${token}"`;
    copied = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Parses a webhook body. Rule: an integer that does not fit a JS safe integer becomes a string
 * holding its exact digits; every other number is a number. Duplicate keys keep the last value,
 * as JSON.parse does. Throws InvalidJsonError on anything that is not JSON.
 *
 * JSON.parse (V8's own parser) reads the body once the integers it would round are quoted
 * (quoteUnsafeIntegers); lossless-json reads the same rule in JavaScript, several times slower
 * and with an object per number, and is kept to say why a body is not JSON.
 */
export function parseWebhookBody(raw: string): unknown {
  try {
    return JSON.parse(quoteUnsafeIntegers(raw)) as unknown;
  } catch {
    // not JSON: lossless-json says why
  }
  return parseLossless(raw);
}

/** The rule above, read by lossless-json whatever the body holds: the path for long digit runs. */
export function parseLossless(raw: string): unknown {
  try {
    return parse(raw, null, { parseNumber, onDuplicateKey: ({ newValue }) => newValue });
  } catch (err) {
    throw new InvalidJsonError(`body is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}
