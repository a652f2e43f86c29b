import { emptyProgress, parseKinds, parseProgress, resetKind, totals } from '../../../src/backfill/progress';
import { bulkQuery, sinceFilter } from '../../../src/backfill/queries';
import { etaSeconds } from '../../../src/admin/backfill';

describe('backfill progress', () => {
  it('round-trips through JSON and tolerates garbage', () => {
    const p = emptyProgress();
    p.kind = 'orders';
    p.done = ['customers'];
    p.operationId = 'gid://shopify/BulkOperation/1';
    p.line = 120;
    p.byte = 98_000;
    p.counts.customers = { total: 10, processed: 10, queued: 9, skipped: 1 };
    expect(parseProgress(JSON.stringify(p))).toEqual({ ...p, note: null });
    expect(parseProgress('not json')).toEqual(emptyProgress());
    expect(parseProgress('{"line":-4,"kind":"products","done":["orders","x","orders"]}')).toMatchObject({
      line: 0,
      kind: null,
      done: ['orders'],
    });
  });

  it('orders kinds customers first and drops unknown ones', () => {
    expect(parseKinds('["orders","customers","products"]')).toEqual(['customers', 'orders']);
    expect(parseKinds('nope')).toEqual([]);
  });

  it('sums counts over the backfill’s kinds; the total is unknown until every kind is counted', () => {
    const p = emptyProgress();
    p.counts.customers = { total: 10, processed: 10, queued: 8, skipped: 2 };
    expect(totals(p, ['customers'])).toEqual({ processed: 10, queued: 8, skipped: 2, total: 10 });
    expect(totals(p, ['customers', 'orders']).total).toBeNull();
  });

  it('restarting a kind keeps what it queued but reads and counts it again', () => {
    const p = emptyProgress();
    p.counts.orders = { total: 50, processed: 30, queued: 25, skipped: 5 };
    Object.assign(p, { operationId: 'op', url: 'u', line: 40, byte: 4000, attempts: 2 });
    resetKind(p, 'orders', true);
    expect(p).toMatchObject({
      kind: 'orders',
      operationId: null,
      url: null,
      line: 0,
      byte: 0,
      attempts: 2,
      counts: { orders: { total: 50, processed: 0, queued: 25, skipped: 0 } },
    });
  });
});

describe('bulk queries', () => {
  it('filters orders by creation date, quoted as Shopify’s search syntax wants', () => {
    expect(sinceFilter(new Date('2025-11-21T10:20:30.456Z'))).toBe("created_at:>='2025-11-21T10:20:30Z'");
    expect(bulkQuery('orders', new Date('2025-11-21T00:00:00Z'))).toContain(
      `orders(query: "created_at:>='2025-11-21T00:00:00Z'", sortKey: CREATED_AT)`,
    );
    expect(bulkQuery('orders', null)).toContain('orders(sortKey: CREATED_AT)');
  });

  it('asks for the fields the mappers need and no `first` on connections', () => {
    const customers = bulkQuery('customers', null);
    for (const f of ['defaultEmailAddress', 'marketingState', 'numberOfOrders', 'amountSpent', 'tags', 'defaultPhoneNumber'])
      expect(customers).toContain(f);
    expect(bulkQuery('orders', null)).toContain('lineItems');
    expect(`${customers}${bulkQuery('orders', null)}`).not.toMatch(/first:/);
  });
});

describe('the ETA', () => {
  it('is what is left (waiting in the outbox and still to read) at the workspace’s rate', () => {
    expect(etaSeconds({ state: 'running', total: 10_000, processed: 4_000, waiting: 1_000, ratePerSec: 10 })).toBe(700);
    expect(etaSeconds({ state: 'completed', total: 10_000, processed: 9_990, waiting: 25, ratePerSec: 10 })).toBe(3);
    expect(etaSeconds({ state: 'completed', total: 10, processed: 10, waiting: 0, ratePerSec: 10 })).toBe(0);
  });

  it('is unknown before Shopify counted, and null for a stopped import', () => {
    expect(etaSeconds({ state: 'pending', total: null, processed: 0, waiting: 0, ratePerSec: 10 })).toBeNull();
    expect(etaSeconds({ state: 'cancelled', total: 10, processed: 5, waiting: 0, ratePerSec: 10 })).toBeNull();
  });
});
