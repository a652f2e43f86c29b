// The one rule for an email address the service will accept, applied before a message is stored
// (and to contact deletes): the service answers 400 to an invalid address, and too many bad
// requests earn a temporary block (403) for the merchant's whole team. zod does the checking.
import { z } from 'zod';

// one @, a dotted domain, no whitespace and no control or invisible format characters
const ADDRESS = /^[^\s@\p{C}]+@[^\s@\p{C}.]+(\.[^\s@\p{C}.]+)+$/u;

export const emailAddress = z.string().max(254, 'an email address has at most 254 characters').regex(ADDRESS, 'not an email address');

/** Trimmed and lower-cased: the service keys contacts by email, so one person is one contact. */
export function normalizeEmail(v: string): string {
  return v.trim().toLowerCase();
}

export function isEmailAddress(v: string): boolean {
  return emailAddress.safeParse(v).success;
}

/** A hostile value, shown safely in a reason: control characters escaped, at most 80 characters. */
export function describeValue(v: string): string {
  const shown = JSON.stringify(v.length > 80 ? `${v.slice(0, 79)}…` : v);
  return shown.replace(
    /[\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
