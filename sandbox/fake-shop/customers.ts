// The fake shop's customers for the Admin API: `customers(first:, query:)` with Shopify's search
// terms `email:"…"` joined by OR (matched exactly, case aside), and `customer(id:)` with its
// `defaultEmailAddress`, behind read_customers and the cost bucket. Every shop starts with the sandbox storefront's logged-in customer; tests add their own.
import type { GraphqlHandler } from './graphql';
import type { FakeShopState } from './state';
import { accessDenied, grants, type CostBuckets } from './cost';
import { SANDBOX_CUSTOMER } from './storefront-data';

export interface FakeCustomerInit {
  email: string;
  /** Numeric id; the gid is gid://shopify/Customer/{id}. */
  id?: string;
}

let nextCustomerId = 7_200_000;

export class FakeCustomers {
  private readonly byShop = new Map<string, Map<string, { id: string; email: string }>>();
  /** customers(query:) calls answered, per shop. */
  readonly queries = new Map<string, number>();

  of(shop: string): Map<string, { id: string; email: string }> {
    let m = this.byShop.get(shop);
    if (!m) {
      m = new Map([[SANDBOX_CUSTOMER.email, { id: SANDBOX_CUSTOMER.id, email: SANDBOX_CUSTOMER.email }]]);
      this.byShop.set(shop, m);
    }
    return m;
  }

  /** An empty email: a customer without one (a phone-only account), found by id only. */
  add(shop: string, c: FakeCustomerInit): void {
    const id = c.id ?? String(nextCustomerId++);
    const email = c.email.trim();
    this.of(shop).set(email ? email.toLowerCase() : `id:${id}`, { id, email });
  }

  remove(shop: string, email: string): boolean {
    return this.of(shop).delete(email.trim().toLowerCase());
  }

  byId(shop: string, id: string): { id: string; email: string } | undefined {
    for (const c of this.of(shop).values()) if (c.id === id) return c;
    return undefined;
  }
}

/** The emails of a search query's `email:"…"` (or bare `email:…`) terms. */
export function emailTerms(query: string): string[] {
  const out: string[] = [];
  for (const m of query.matchAll(/email:(?:"((?:[^"\\]|\\.)*)"|([^\s"()]+))/g))
    out.push((m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!).toLowerCase());
  return out;
}

export function customersHandler(state: FakeShopState, customers: FakeCustomers, costs: CostBuckets): GraphqlHandler {
  return ({ shop, query, variables }) => {
    if (!/\bcustomers\s*\(/.test(query)) return undefined;
    if (!grants(state.scopesOf(shop.domain), 'read_customers')) return accessDenied('customers', 'read_customers');
    const first = Math.min(250, Math.max(1, Number(variables.first) || 50));
    const wanted = emailTerms(typeof variables.query === 'string' ? variables.query : '');
    customers.queries.set(shop.domain, (customers.queries.get(shop.domain) ?? 0) + 1);
    const known = customers.of(shop.domain);
    const nodes = wanted.flatMap((e) => {
      const c = known.get(e);
      return c ? [{ id: `gid://shopify/Customer/${c.id}`, email: c.email }] : [];
    });
    return costs.charge(shop.domain, 2 + first, () => ({ data: { customers: { nodes: nodes.slice(0, first) } } }));
  };
}

/** `customer(id:)`: the customer and their default email address (null: no such customer). */
export function customerByIdHandler(state: FakeShopState, customers: FakeCustomers, costs: CostBuckets): GraphqlHandler {
  return ({ shop, query, variables }) => {
    if (!/\bcustomer\s*\(/.test(query)) return undefined;
    if (!grants(state.scopesOf(shop.domain), 'read_customers')) return accessDenied('customer', 'read_customers');
    const m = /^gid:\/\/shopify\/Customer\/(\d+)$/.exec(String(variables.id ?? ''));
    const c = m ? customers.byId(shop.domain, m[1]!) : undefined;
    return costs.charge(shop.domain, 2, () => ({
      data: {
        customer: c
          ? {
              id: `gid://shopify/Customer/${c.id}`,
              defaultEmailAddress: c.email ? { emailAddress: c.email } : null,
            }
          : null,
      },
    }));
  };
}
