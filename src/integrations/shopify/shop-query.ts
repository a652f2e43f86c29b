// The shop's id and name from the Admin GraphQL API: the service needs both to bind a workspace.
import type { Session } from '@shopify/shopify-api';
import { routeShop, type ShopifyApi } from './api';

export interface ShopIdentity {
  /** The numeric id from the shop's gid (`gid://shopify/Shop/123` → `123`), or the gid itself. */
  shopId: string;
  shopName: string;
  /** The shop's myshopify domain, as Shopify reports it. */
  domain: string;
}

export const SHOP_QUERY = `#graphql
  query ShopIdentity { shop { id name myshopifyDomain } }`;

interface ShopQueryData {
  shop?: { id?: string; name?: string; myshopifyDomain?: string } | null;
}

/** Throws the library's errors (classify them with classifyShopifyError). */
export async function fetchShopIdentity(shopify: ShopifyApi, session: Session): Promise<ShopIdentity> {
  routeShop(shopify, session.shop);
  const client = new shopify.clients.Graphql({ session });
  const res = await client.request<ShopQueryData>(SHOP_QUERY);
  const shop = res.data?.shop;
  if (!shop?.id) throw new Error('the Admin API answered the shop query without a shop');
  return {
    shopId: numericId(shop.id),
    shopName: shop.name ?? session.shop,
    domain: shop.myshopifyDomain ?? session.shop,
  };
}

export function numericId(gid: string): string {
  const m = /^gid:\/\/shopify\/[A-Za-z]+\/(\d+)$/.exec(gid);
  return m ? m[1]! : gid;
}
