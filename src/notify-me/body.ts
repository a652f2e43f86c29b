// The body of a notify-me request, as the storefront block sends it (form-encoded or JSON): the
// variant, and for a guest the email they typed. Everything in it is the browser's claim; Shopify
// signs only the query (src/integrations/shopify/app-proxy.ts). Pure.
import { z } from 'zod';
import { isEmailAddress, normalizeEmail } from '../mapping/email';

export interface NotifyBody {
  /** The variant's numeric id, exact (never through a JS number past 2^53). */
  variantId: string;
  /** What was sent as the email, trimmed, unchecked; null when nothing (or only blanks) was. */
  email: string | null;
}

const VARIANT_GID = /^gid:\/\/shopify\/ProductVariant\/(\d{1,20})$/;
const DIGITS = /^\d{1,20}$/;

const schema = z.object({
  variant_id: z.union([z.number().int().positive().refine(Number.isSafeInteger), z.string().trim().min(1).max(100)]),
  email: z.unknown().optional(),
});

/** A variant id as the block (or a theme) may send it: a number, digits, or a gid; null when none of these. */
export function variantIdOf(v: number | string): string | null {
  const digits = typeof v === 'number' ? String(v) : DIGITS.test(v) ? v : (VARIANT_GID.exec(v)?.[1] ?? null);
  const id = digits?.replace(/^0+/, '') ?? '';
  return id === '' ? null : id;
}

/** The body read: a variant id is required (else null); the email is checked only for a guest (guestEmail). */
export function parseNotifyBody(raw: unknown): NotifyBody | null {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) return null;
  const variantId = variantIdOf(parsed.data.variant_id);
  if (variantId === null) return null;
  const e = parsed.data.email;
  // a value of another type (a repeated form field, a number) is kept as text: no address, so refused
  const text = e === undefined || e === null ? '' : typeof e === 'string' ? e : JSON.stringify(e);
  const email = text.trim();
  return { variantId, email: email === '' ? null : email };
}

/** A guest's typed email: trimmed and lower-cased when it is an address the email service takes. */
export function guestEmail(typed: string | null): { ok: true; email: string } | { ok: false; problem: 'email_required' | 'invalid_email' } {
  if (typed === null) return { ok: false, problem: 'email_required' };
  const email = normalizeEmail(typed);
  return isEmailAddress(email) ? { ok: true, email } : { ok: false, problem: 'invalid_email' };
}
