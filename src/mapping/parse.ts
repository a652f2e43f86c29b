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
// The smallest integer JSON.parse rounds, 2^53 + 1, has 16 digits: a body with no run of 16
// digits (anywhere, strings included) holds none, and JSON.parse, V8's own parser, reads it
// exactly as the rule below does, in a fraction of lossless-json's time. Shopify's ids have 13 to
// 14 digits today; the 18-digit ids of its own samples, or 16 digits in a note, take the lossless
// path.
const LONG_DIGITS = /\d{16}/;

/** Integers outside the safe range become their exact decimal string; other numbers stay numbers. */
function parseNumber(text: string): number | string {
  if (INTEGER.test(text) && !Number.isSafeInteger(Number(text))) return text;
  return Number(text);
}

/**
 * Parses a webhook body. Rule: an integer that does not fit a JS safe integer becomes a string
 * holding its exact digits; every other number is a number. Duplicate keys keep the last value,
 * as JSON.parse does. Throws InvalidJsonError on anything that is not JSON.
 */
export function parseWebhookBody(raw: string): unknown {
  if (!LONG_DIGITS.test(raw)) {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      // not JSON: lossless-json says why, as it always has
    }
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
