// Fake Admin GraphQL: checks X-Shopify-Access-Token, then asks the registered handlers in turn.
// The shop query is built in; more (bulk operations, ...) are added with addGraphqlHandler.
import express, { Router, type Request, type Response } from 'express';
import type { FakeShopRecord, FakeShopState } from './state';

export interface GraphqlRequest {
  shop: FakeShopRecord;
  query: string;
  variables: Record<string, unknown>;
  operationName?: string;
  apiVersion: string;
}

/** Returns the response body (`{data}` or `{errors}`), or undefined when the query is not its own. */
export type GraphqlHandler = (req: GraphqlRequest) => unknown | Promise<unknown>;

export const shopQueryHandler: GraphqlHandler = ({ shop, query }) => {
  if (!/\bshop\s*\{/.test(query)) return undefined;
  return { data: { shop: { id: `gid://shopify/Shop/${shop.id}`, name: shop.name, myshopifyDomain: shop.domain } } };
};

export function graphqlRoutes(state: FakeShopState, handlers: GraphqlHandler[]): Router {
  const router = Router();
  router.post('/admin/api/:version/graphql.json', express.json({ limit: '5mb' }), async (req: Request, res: Response) => {
    const version = String(req.params.version);
    if (!/^\d{4}-\d{2}$/.test(version)) return res.status(404).json({ errors: 'Not Found' });
    const token = state.checkAccessToken(String(req.get('x-shopify-access-token') ?? ''));
    const shop = token?.valid ? state.shops.get(token.shop) : undefined;
    if (!shop) {
      if (token) state.statsFor(token.shop).graphqlUnauthorized++;
      return res.status(401).json({ errors: '[API] Invalid API key or access token (unrecognized login or wrong password)' });
    }
    state.statsFor(shop.domain).graphqlCalls++;
    const injected = state.takeFailure('graphql');
    if (injected) return res.status(injected.status).json({ errors: 'injected failure' });
    const body = (req.body ?? {}) as { query?: unknown; variables?: unknown; operationName?: unknown };
    if (typeof body.query !== 'string') return res.status(400).json({ errors: { query: 'Required parameter missing or invalid' } });
    const degraded = state.degradationOf(shop.domain, body.query);
    if (degraded.delayMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, degraded.delayMs));
      if (res.destroyed || req.socket.destroyed) return;
    }
    if (degraded.status !== null) return res.status(degraded.status).json({ errors: 'Internal Server Error' });
    const request: GraphqlRequest = {
      shop,
      query: body.query,
      variables: (body.variables as Record<string, unknown>) ?? {},
      operationName: typeof body.operationName === 'string' ? body.operationName : undefined,
      apiVersion: version,
    };
    for (const handler of handlers) {
      const result = await handler(request);
      if (result !== undefined) return res.json(result);
    }
    res.json({ errors: [{ message: 'The fake shop has no handler for this query' }] });
  });
  return router;
}
