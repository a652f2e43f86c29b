// A huge order, as a store selling bulk stationery might send: the fixture orders/create with
// `lines` line items of about 180 bytes each (10,000 make a body of about 1.8 MB). Quantities
// vary, so item_count checks a real sum. Ids are written as Shopify's samples write them: 18-digit
// JSON numbers, which take the lossless parser's path.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const FIXTURE = join(__dirname, '..', 'fixtures', 'orders-create.json');

/** The quantity of line i: 1 to 5. */
export const quantityOf = (i: number): number => (i % 5) + 1;

/** The exact total quantity of an order of `lines` line items. */
export function totalQuantity(lines: number): number {
  let n = 0;
  for (let i = 0; i < lines; i++) n += quantityOf(i);
  return n;
}

function lineItemJson(i: number): string {
  const id = `8665503117${String(66439020 + i).padStart(8, '0')}`;
  return `{"id":${id},"admin_graphql_api_id":"gid://shopify/LineItem/${id}","product_id":788032119674292922,"variant_id":${49148385 + i},"title":"Notebook A5","variant_title":"Dot grid ${i}","sku":"NB-A5-${i}","quantity":${quantityOf(i)},"price":"4.50"}`;
}

/** The raw body of an orders/create with `lines` line items, exact as Shopify would send it. */
export function bigOrderBody(lines: number, over: { id?: string; email?: string; checkoutToken?: string } = {}): string {
  const raw = readFileSync(FIXTURE, 'utf8');
  const items = Array.from({ length: lines }, (_, i) => lineItemJson(i)).join(',');
  let body = raw.replace(/"line_items":\s*\[[\s\S]*?\n {2}\],?/, (m) => `"line_items": [${items}]${m.trimEnd().endsWith(',') ? ',' : ''}`);
  if (over.id) body = body.replace(/820982911946154508/g, over.id);
  if (over.email) body = body.replace(/jane\.okafor@example\.com/g, over.email);
  if (over.checkoutToken) body = body.replace(/b8f2c3a1e5d94c7a9f0e1d2c3b4a5968/g, over.checkoutToken);
  if (!body.includes(`"sku":"NB-A5-${lines - 1}"`)) throw new Error('could not put the line items into the fixture');
  return body;
}
