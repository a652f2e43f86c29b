// bulk_operations/finish (a side effect of stage 2: no event of its own): Shopify finished a bulk
// operation. One an import started wakes that import (src/backfill/runner.ts), which reads the
// result itself; another is not the app's.
import { outcomePlan, type SideHandler } from '../plan';

export interface BulkOperationFinishDeps {
  /** Tells the import waiting on the operation; true when the operation belongs to an import. */
  onBulkOperationFinish(shopDomain: string, payload: unknown): Promise<boolean>;
}

export function bulkOperationFinish(deps: BulkOperationFinishDeps): SideHandler {
  return async (r) => {
    const matched = await deps.onBulkOperationFinish(r.shopDomain, r.payload);
    return outcomePlan(
      [r],
      'ignored',
      matched ? 'bulk operation of an import; the import was told' : 'bulk operation not started by an import',
    );
  };
}
