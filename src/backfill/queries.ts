// The Admin GraphQL documents of the historical import. Bulk queries may not take `first`
// on connections; nested connections (an order's line items) come back as lines of their own
// with __parentId. Orders run with groupObjects: true so those lines follow their order at
// once, which is what lets the reader keep one order in memory at a time.
import type { Kind } from './progress';

// As 2026-10 shapes a customer: consent on its default email address and phone number, the
// purchase summary and last order on the customer (lastOrder needs read_orders).
export const CUSTOMER_FIELDS = `
  id
  firstName
  lastName
  locale
  defaultEmailAddress { emailAddress marketingState marketingOptInLevel marketingUpdatedAt }
  defaultPhoneNumber { phoneNumber smsMarketingConsent { state optInLevel updatedAt collectedFrom } }
  tags
  numberOfOrders
  amountSpent { amount currencyCode }
  lastOrder { id createdAt }
  defaultAddress { city countryCodeV2 provinceCode }
  createdAt
  updatedAt`;

const MONEY = '{ shopMoney { amount currencyCode } }';

export const ORDER_FIELDS = `
  id
  name
  email
  createdAt
  processedAt
  currencyCode
  totalPriceSet ${MONEY}
  subtotalPriceSet ${MONEY}
  totalTaxSet ${MONEY}
  totalDiscountsSet ${MONEY}
  discountCodes
  statusPageUrl
  customerLocale
  customer { id firstName lastName defaultEmailAddress { emailAddress marketingState marketingOptInLevel marketingUpdatedAt } defaultPhoneNumber { phoneNumber } defaultAddress { city countryCodeV2 provinceCode } }
  shippingAddress { firstName lastName city countryCodeV2 }
  billingAddress { firstName lastName city countryCodeV2 }
  lineItems {
    edges {
      node {
        id
        title
        variantTitle
        sku
        quantity
        originalUnitPriceSet ${MONEY}
        product { id }
        variant { id }
      }
    }
  }`;

/** Shopify's search syntax wants the date quoted: created_at:>='2025-11-21T00:00:00Z'. */
export function sinceFilter(since: Date | null): string | null {
  return since ? `created_at:>='${since.toISOString().replace(/\.\d{3}Z$/, 'Z')}'` : null;
}

/** The query run in bulk for a kind (a document without variables, as bulk operations require). */
export function bulkQuery(kind: Kind, since: Date | null): string {
  if (kind === 'customers') return `{ customers { edges { node { ${CUSTOMER_FIELDS} } } } }`;
  const filter = sinceFilter(since);
  const args = filter ? `(query: ${JSON.stringify(filter)}, sortKey: CREATED_AT)` : '(sortKey: CREATED_AT)';
  return `{ orders${args} { edges { node { ${ORDER_FIELDS} } } } }`;
}

export const RUN_BULK_QUERY = `#graphql
  mutation RunBulkImport($query: String!, $groupObjects: Boolean!) {
    bulkOperationRunQuery(query: $query, groupObjects: $groupObjects) {
      bulkOperation { id status }
      userErrors { field message code }
    }
  }`;

const OPERATION_FIELDS = 'id status errorCode objectCount rootObjectCount fileSize url partialDataUrl createdAt completedAt';

export const BULK_OPERATION = `#graphql
  query BulkImportOperation($id: ID!) {
    node(id: $id) { ... on BulkOperation { ${OPERATION_FIELDS} } }
  }`;

export const CANCEL_BULK_OPERATION = `#graphql
  mutation CancelBulkImport($id: ID!) {
    bulkOperationCancel(id: $id) { bulkOperation { id status } userErrors { field message } }
  }`;

export const COUNT_CUSTOMERS = `#graphql
  query ImportCountCustomers { customersCount(limit: null) { count precision } }`;

export const COUNT_ORDERS = `#graphql
  query ImportCountOrders($query: String) { ordersCount(query: $query, limit: null) { count precision } }`;
