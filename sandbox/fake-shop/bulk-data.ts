// The data of the fake shop's bulk operations: generated customers and orders (from
// sandbox/samples.ts) in the Admin GraphQL shape, and the JSONL result file produced line
// by line, so any size streams without being held in memory.
import { sampleCustomer, sampleOrder } from '../samples';

export interface BulkDataOptions {
  /** Customers the shop has. Default 1 000. */
  customers?: number;
  /** Orders the shop has. Default 1 000. */
  orders?: number;
  /** A query completes this long after it starts. Default 300 ms. */
  completeAfterMs?: number;
  /** Orders are spread evenly over this many days before `anchor` (newest first). Default 300. */
  orderSpanDays?: number;
  anchor?: Date;
  /** Every n-th customer has no email address (a phone-only customer). 0: none. */
  phoneOnlyEvery?: number;
  /** When set, bulk_operations/finish is sent to this app URL as each operation ends. */
  webhookUrl?: string;
}

export type FakeBulkKind = 'customers' | 'orders';

export interface FakeBulkOperation {
  id: string;
  shop: string;
  kind: FakeBulkKind;
  since: Date | null;
  groupObjects: boolean;
  createdAt: Date;
  completeAt: number;
  failWith: string | null;
  canceled: boolean;
  /** Data options frozen when the operation started. */
  data: Required<Omit<BulkDataOptions, 'webhookUrl' | 'completeAfterMs'>>;
}

const DAY = 86_400_000;

/** A generated customer in the Admin GraphQL shape of the bulk query. */
export function graphqlCustomer(n: number, opts: { phoneOnly?: boolean } = {}): Record<string, unknown> {
  const c = sampleCustomer(n);
  const consent = c.email_marketing_consent;
  return {
    id: c.admin_graphql_api_id,
    firstName: c.first_name,
    lastName: c.last_name,
    defaultEmailAddress: opts.phoneOnly
      ? null
      : {
          emailAddress: c.email,
          marketingState: consent.state.toUpperCase(),
          marketingOptInLevel: consent.opt_in_level?.toUpperCase() ?? null,
          marketingUpdatedAt: consent.consent_updated_at,
        },
    defaultPhoneNumber:
      c.phone || opts.phoneOnly
        ? {
            phoneNumber: c.phone ?? `+1555${String(2_000_000 + n).slice(-7)}`,
            // as 2026-10 shapes it: the consent on the phone number
            smsMarketingConsent: { state: 'NOT_SUBSCRIBED', optInLevel: null, updatedAt: null, collectedFrom: 'SHOPIFY' },
          }
        : null,
    locale: n % 2 === 0 ? 'en' : 'fr',
    tags: c.tags
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
    numberOfOrders: String(c.orders_count),
    amountSpent: { amount: c.total_spent, currencyCode: 'USD' },
    lastOrder: c.orders_count > 0 ? { id: `gid://shopify/Order/${5_000_000_000_000 + n}`, createdAt: c.updated_at } : null,
    defaultAddress: { city: c.default_address.city, countryCodeV2: c.default_address.country_code, provinceCode: null },
    createdAt: c.created_at,
    updatedAt: c.updated_at,
  };
}

/** A generated order and its line items in the Admin GraphQL shape (line items carry __parentId). */
export function graphqlOrder(n: number, createdAt?: Date): { order: Record<string, unknown>; lineItems: Record<string, unknown>[] } {
  const o = sampleOrder(n, { createdAt });
  const money = (amount: string) => ({ shopMoney: { amount, currencyCode: o.currency } });
  const address = (a: typeof o.shipping_address) => ({
    firstName: a.first_name,
    lastName: a.last_name,
    city: a.city,
    countryCodeV2: a.country_code,
  });
  const consent = o.customer.email_marketing_consent;
  const order = {
    id: o.admin_graphql_api_id,
    name: o.name,
    email: o.email,
    createdAt: o.created_at,
    processedAt: o.processed_at,
    currencyCode: o.currency,
    totalPriceSet: money(o.total_price),
    subtotalPriceSet: money(o.subtotal_price),
    totalTaxSet: money(o.total_tax),
    totalDiscountsSet: money(o.total_discounts),
    discountCodes: o.discount_codes.map((d) => d.code),
    statusPageUrl: o.order_status_url,
    customer: {
      id: `gid://shopify/Customer/${o.customer.id}`,
      firstName: o.customer.first_name,
      lastName: o.customer.last_name,
      defaultEmailAddress: {
        emailAddress: o.customer.email,
        marketingState: consent.state.toUpperCase(),
        marketingOptInLevel: consent.opt_in_level?.toUpperCase() ?? null,
        marketingUpdatedAt: consent.consent_updated_at,
      },
      defaultPhoneNumber: o.customer.phone ? { phoneNumber: o.customer.phone } : null,
      defaultAddress: { city: o.customer.default_address.city, countryCodeV2: o.customer.default_address.country_code },
    },
    shippingAddress: address(o.shipping_address),
    billingAddress: address(o.billing_address),
  };
  const lineItems = o.line_items.map((li) => ({
    id: `gid://shopify/LineItem/${li.id}`,
    title: li.title,
    variantTitle: li.variant_title,
    sku: li.sku,
    quantity: li.quantity,
    originalUnitPriceSet: money(li.price),
    product: { id: `gid://shopify/Product/${li.product_id}` },
    variant: { id: `gid://shopify/ProductVariant/${li.variant_id}` },
    __parentId: o.admin_graphql_api_id,
  }));
  return { order, lineItems };
}

export function orderDate(op: FakeBulkOperation, n: number): Date {
  const { anchor, orderSpanDays, orders } = op.data;
  return new Date(anchor.getTime() - Math.floor(((n - 1) * orderSpanDays * DAY) / Math.max(1, orders)));
}

/** Order numbers (1-based) the operation's filter keeps; newest first, so they are a prefix. */
export function orderCount(op: FakeBulkOperation): number {
  if (!op.since) return op.data.orders;
  let n = 0;
  while (n < op.data.orders && orderDate(op, n + 1).getTime() >= op.since.getTime()) n++;
  return n;
}

export function rootCount(op: FakeBulkOperation): number {
  return op.kind === 'customers' ? op.data.customers : orderCount(op);
}

/** The result file, line by line. */
export function* resultLines(op: FakeBulkOperation): Generator<string> {
  if (op.kind === 'customers') {
    const every = op.data.phoneOnlyEvery;
    for (let n = 1; n <= op.data.customers; n++)
      yield `${JSON.stringify(graphqlCustomer(n, { phoneOnly: every > 0 && n % every === 0 }))}\n`;
    return;
  }
  const count = orderCount(op);
  if (op.groupObjects) {
    for (let n = 1; n <= count; n++) {
      const { order, lineItems } = graphqlOrder(n, orderDate(op, n));
      yield `${JSON.stringify(order)}\n`;
      for (const li of lineItems) yield `${JSON.stringify(li)}\n`;
    }
    return;
  }
  // without grouping, Shopify only promises that children come after their parent
  for (let n = 1; n <= count; n++) yield `${JSON.stringify(graphqlOrder(n, orderDate(op, n)).order)}\n`;
  for (let n = 1; n <= count; n++) for (const li of graphqlOrder(n, orderDate(op, n)).lineItems) yield `${JSON.stringify(li)}\n`;
}

/** Lines from byte `from` on, in chunks of about 64 KB. */
export function* resultChunks(op: FakeBulkOperation, from: number): Generator<Buffer> {
  let offset = 0;
  let pending: Buffer[] = [];
  let size = 0;
  for (const line of resultLines(op)) {
    let buf = Buffer.from(line, 'utf8');
    const end = offset + buf.length;
    if (end <= from) {
      offset = end;
      continue;
    }
    if (offset < from) buf = buf.subarray(from - offset);
    offset = end;
    pending.push(buf);
    size += buf.length;
    if (size >= 65_536) {
      yield Buffer.concat(pending);
      pending = [];
      size = 0;
    }
  }
  if (size) yield Buffer.concat(pending);
}
