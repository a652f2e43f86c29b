// The connector_test event sent by POST /api/test-event. It is always on.
import type { NewMessage } from './types';

export const TEST_EVENT_NAME = 'connector_test';
export const TEST_EVENT_TOPIC = 'connector/test';

export function buildTestEvent(input: { shopDomain: string; email: string; sourceId: string; now: Date }): NewMessage {
  return {
    sourceId: input.sourceId,
    eventName: TEST_EVENT_NAME,
    topic: TEST_EVENT_TOPIC,
    email: input.email,
    customerId: null,
    checkoutToken: null,
    runAt: input.now,
    body: {
      event_name: TEST_EVENT_NAME,
      email: input.email,
      event_attribute: {
        shop_domain: input.shopDomain,
        source_id: input.sourceId,
        occurred_at: input.now.toISOString(),
        message: 'A test event from the Shopify connector',
      },
    },
  };
}
