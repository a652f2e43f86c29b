// Which records concern the customer a compliance payload names (customers/redact,
// customers/data_request). A record matches by exact value only: the normalised email, the
// customer id, the order ids. Never by a substring: "ann@gmail.com" is not "joann@gmail.com",
// customer 1234 is not customer 12345, and `_` and `%` in an address are characters, not LIKE
// wildcards. Pure: the use case reads the rows, these functions decide.
import { normalizeEmail } from '../../mapping/email';
import { InvalidJsonError, parseWebhookBody } from '../../mapping/parse';
import { arr, id, obj, objectId, str, type Obj } from '../../mapping/read';

export interface CustomerRef {
  id: string | null;
  /** Trimmed and lower-cased, as every stored email is (mapping/email.ts): the address the payload names. */
  email: string | null;
  /** Every address of the customer: the payload's, and those the app knew them by (their profile's current and former ones). */
  emails: string[];
  orderIds: string[];
}

/** The ref with more addresses of the same customer (their profile's). */
export function withEmails(ref: CustomerRef, more: readonly string[]): CustomerRef {
  return { ...ref, emails: [...new Set([...ref.emails, ...more.map(normalizeEmail)])] };
}

/** The customer named by a compliance payload, read as tolerantly as any payload (read.ts). */
export function customerRef(payload: unknown, ordersKey: 'orders_to_redact' | 'orders_requested'): CustomerRef {
  const p = obj(payload);
  const c = obj(p?.customer);
  const orderIds = arr(p?.[ordersKey])
    .map(id)
    .filter((o): o is string => o !== null);
  const raw = str(c?.email);
  const email = raw === null ? null : normalizeEmail(raw);
  return { id: id(c?.id), email, emails: email === null ? [] : [email], orderIds };
}

// Keys whose value is a customer's or an order's id, in Shopify's payloads (snake case) and in
// what this app stores (its exports hold order summaries in camel case).
const CUSTOMER_ID_KEYS = new Set(['customer_id', 'customerId', 'shopify_customer_id']);
const ORDER_ID_KEYS = new Set(['order_id', 'orderId']);
const ORDER_LIST_KEYS = new Set(['orders_to_redact', 'orders_requested']);
const GID = /^gid:\/\/shopify\/(Customer|Order)\/(\d+)(?:\?.*)?$/;

/** Topics whose top-level object is a customer, or an order, so its own `id` names one. */
const topLevelKind = (topic: string): 'customer' | 'order' | null =>
  topic.startsWith('customers/') || topic === 'customers_marketing_consent/update'
    ? 'customer'
    : topic.startsWith('orders/')
      ? 'order'
      : null;

class Matcher {
  private readonly orders: Set<string>;
  private readonly emails: Set<string>;

  constructor(private readonly ref: CustomerRef) {
    this.orders = new Set(ref.orderIds);
    this.emails = new Set(ref.emails);
  }

  isCustomer = (v: unknown): boolean => this.ref.id !== null && id(v) === this.ref.id;
  isOrder = (v: unknown): boolean => this.orders.size > 0 && this.orders.has(id(v) ?? '');
  /** An object is the customer (or one of the orders) by its `id` or its gid. */
  private names(o: Obj, is: (v: unknown) => boolean): boolean {
    return is(o.id) || is(objectId(o));
  }

  value(v: unknown, key: string | null): boolean {
    if (typeof v === 'string') return this.string(v);
    if (Array.isArray(v)) return (key !== null && ORDER_LIST_KEYS.has(key) && v.some(this.isOrder)) || v.some((x) => this.value(x, null));
    const o = obj(v);
    return o !== null && this.object(o, key);
  }

  object(o: Obj, key: string | null): boolean {
    if (key === 'customer' && this.names(o, this.isCustomer)) return true;
    if (key === 'order' && this.names(o, this.isOrder)) return true;
    for (const [k, v] of Object.entries(o)) {
      if (CUSTOMER_ID_KEYS.has(k) && this.isCustomer(v)) return true;
      if (ORDER_ID_KEYS.has(k) && this.isOrder(v)) return true;
      if (this.value(v, k)) return true;
    }
    return false;
  }

  private string(s: string): boolean {
    if (this.emails.size > 0 && this.emails.has(normalizeEmail(s))) return true;
    const gid = GID.exec(s);
    return gid !== null && (gid[1] === 'Customer' ? this.isCustomer(gid[2]) : this.isOrder(gid[2]));
  }
}

/**
 * Whether a parsed payload concerns the customer: a string in it equal to the customer's email
 * (trimmed, any case), or the customer's or an order's id where the payload names a customer or
 * an order (`customer_id`, `order_id`, a `customer` or `order` object, an `orders_to_redact`
 * list, a gid, or the top-level object of a customers/* or orders/* topic). A number elsewhere
 * (a quantity, an order number, a price) never counts.
 */
export function payloadConcerns(payload: unknown, ref: CustomerRef, topic = ''): boolean {
  const m = new Matcher(ref);
  const top = obj(payload);
  const kind = topLevelKind(topic);
  if (
    top !== null &&
    kind !== null &&
    (kind === 'customer' ? m.isCustomer(top.id) || m.isCustomer(objectId(top)) : m.isOrder(top.id) || m.isOrder(objectId(top)))
  )
    return true;
  return m.value(payload, null);
}

/** A stored JSON text read with the webhook rule (ids past 2^53 stay exact); null when it is not JSON. */
export function readJson(text: string | null): unknown {
  if (text === null) return null;
  try {
    return parseWebhookBody(text);
  } catch (err) {
    if (err instanceof InvalidJsonError) return null;
    throw err;
  }
}

export interface PendingReceiptRef {
  topic: string;
  kind: string;
  body: string | null;
}

/**
 * Whether a receipt not processed yet concerns the customer: its body read as JSON and matched by
 * payloadConcerns, and a storefront batch (kind 'pixel') also when it comes from a device tied to
 * the customer (`clientIds`). A body that is not JSON concerns nobody: stage 2 rejects it unread.
 */
export function receiptConcerns(r: PendingReceiptRef, ref: CustomerRef, clientIds: ReadonlySet<string>): boolean {
  const payload = readJson(r.body);
  if (payload === null) return false;
  if (r.kind === 'pixel') {
    const client = str(obj(payload)?.client_id);
    if (client !== null && clientIds.has(client)) return true;
  }
  return payloadConcerns(payload, ref, r.kind === 'pixel' ? '' : r.topic);
}

// What may stand right before an address's local part, or continue its domain, and so make a
// longer address of which the customer's is only a piece.
const LOCAL_CHAR = /[\p{L}\p{N}!#$%&'*+/=?^_`{|}~.-]/u;
const DOMAIN_CHAR = /[\p{L}\p{N}_-]/u;

/**
 * Whether free text (a service's error message) holds the email as a whole address: any case,
 * not preceded by a character an address may hold, and not followed by more of a domain
 * ("ann@gmail.com" is not in "joann@gmail.com" nor in "ann@gmail.community"; a closing "." or
 * ">" ends it).
 */
export function textNamesEmail(text: string, email: string): boolean {
  const hay = text.toLowerCase();
  const needle = normalizeEmail(email);
  if (needle === '') return false;
  for (let at = hay.indexOf(needle); at >= 0; at = hay.indexOf(needle, at + 1)) {
    const before = Array.from(hay.slice(Math.max(0, at - 2), at)).pop() ?? '';
    const after = hay.slice(at + needle.length, at + needle.length + 2);
    const continues = DOMAIN_CHAR.test(after.charAt(0)) || (after.charAt(0) === '.' && DOMAIN_CHAR.test(after.charAt(1)));
    if (!LOCAL_CHAR.test(before) && !continues) return true;
  }
  return false;
}
