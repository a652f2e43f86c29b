// The catalog topics (side effects of stage 2: no event of their own): products/update and
// products/delete keep the product cache true to Shopify; variants/in_stock and
// variants/out_of_stock keep whether each variant can be bought. A price that falls by at least
// the merchant's threshold, and a variant back in stock, become signals the product-alert runner
// turns into price_dropped and back_in_stock (src/processing/product-alerts/).
import type { Db } from '../../db/client';
import type { ProductCatalog } from '../../integrations/shopify/products';
import { parseStoredSettings } from '../../settings/settings';
import { outcomePlan, type SideHandler } from '../plan';
import type { NewSignal, SignalStore } from '../product-alerts/signals';

export interface ProductSideDeps {
  db: Db;
  products: Pick<ProductCatalog, 'onProductUpdate' | 'onProductDelete' | 'onStockChange'>;
  signals: Pick<SignalStore, 'record'>;
  /** Signals were recorded: the runner may start on them. */
  onSignals: () => void;
}

export type CatalogTopic = 'products/update' | 'products/delete' | 'variants/in_stock' | 'variants/out_of_stock';

export function productSideHandlers(deps: ProductSideDeps): Record<CatalogTopic, SideHandler> {
  const shopOf = (domain: string) =>
    deps.db.shop.findUnique({ where: { domain }, select: { id: true, settings: { select: { data: true } } } });
  const record = async (signals: NewSignal[]) => {
    const n = signals.length ? await deps.signals.record(signals) : 0;
    if (n) deps.onSignals();
    return n;
  };

  return {
    'products/update': async (r) => {
      const shop = await shopOf(r.shopDomain);
      if (!shop) return outcomePlan([r], 'ignored', 'unknown shop');
      const { outcome, prices } = await deps.products.onProductUpdate(shop.id, r.payload);
      const settings = parseStoredSettings(shop.settings?.data);
      const floor = 1 - settings.price_drop_threshold_percent / 100;
      // prices in cents' precision: a drop of exactly the threshold counts
      const drops = prices.filter((p) => Math.round(p.after * 100) <= Math.round(p.before * floor * 100));
      const n =
        drops.length && settings.events.price_dropped
          ? await record(
              drops.map((p) => ({
                shopId: shop.id,
                kind: 'price_drop' as const,
                sourceId: `drop:${r.webhookId}:${p.variantId}`,
                productId: p.productId,
                variantId: p.variantId,
                price: p.after,
                previousPrice: p.before,
                runAt: r.receivedAt,
              })),
            )
          : 0;
      return outcomePlan([r], 'accepted', n ? `${outcome}; ${n} price drop(s) to announce` : outcome);
    },
    'products/delete': async (r) => {
      const shop = await shopOf(r.shopDomain);
      if (!shop) return outcomePlan([r], 'ignored', 'unknown shop');
      const removed = await deps.products.onProductDelete(shop.id, r.payload);
      return outcomePlan([r], 'accepted', removed ? 'cached product removed' : 'product was not cached');
    },
    'variants/in_stock': async (r) => {
      const shop = await shopOf(r.shopDomain);
      if (!shop) return outcomePlan([r], 'ignored', 'unknown shop');
      const stock = await deps.products.onStockChange(shop.id, r.payload, true);
      if (!stock) return outcomePlan([r], 'ignored', 'the payload names no variant');
      if (!parseStoredSettings(shop.settings?.data).events.back_in_stock)
        return outcomePlan([r], 'accepted', 'back in stock noted; back_in_stock is turned off');
      await record([{ shopId: shop.id, kind: 'restock', sourceId: `restock:${r.webhookId}`, ...stock, runAt: r.receivedAt }]);
      return outcomePlan([r], 'accepted', 'back in stock: its subscribers and shoppers are told');
    },
    'variants/out_of_stock': async (r) => {
      const shop = await shopOf(r.shopDomain);
      if (!shop) return outcomePlan([r], 'ignored', 'unknown shop');
      const stock = await deps.products.onStockChange(shop.id, r.payload, false);
      return stock ? outcomePlan([r], 'accepted', 'sold out noted') : outcomePlan([r], 'ignored', 'the payload names no variant');
    },
  };
}
