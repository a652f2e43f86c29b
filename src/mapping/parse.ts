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
  try {
    return parse(raw, null, { parseNumber, onDuplicateKey: ({ newValue }) => newValue });
  } catch (err) {
    throw new InvalidJsonError(`body is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}
