// The one table of topics (src/processing/topics.ts): every topic stage 2 handles and how, the
// event table's topics among them, and the subscriptions shopify.app.toml declares are its rows.
import fs from 'node:fs';
import path from 'node:path';
import { EVENT_TABLE } from '../../src/mapping';
import { handlingOf, isSerial, TOPICS, type Topic } from '../../src/processing/topics';

function tomlTopics(): { topics: string[]; compliance: string[] } {
  const text = fs.readFileSync(path.join(__dirname, '..', '..', 'shopify.app.toml'), 'utf8');
  const list = (key: string) =>
    [...text.matchAll(new RegExp(`^\\s*${key}\\s*=\\s*\\[([^\\]]*)\\]`, 'gm'))].flatMap((m) =>
      [...m[1]!.matchAll(/"([^"]+)"/g)].map((x) => x[1]!),
    );
  return { topics: list('topics'), compliance: list('compliance_topics') };
}

const byHandling = (...h: string[]) => (Object.keys(TOPICS) as Topic[]).filter((t) => h.includes(TOPICS[t])).sort();

describe('the topics table', () => {
  it('forwards exactly the event table’s topics', () => {
    expect(byHandling('forwarded')).toEqual(Object.keys(EVENT_TABLE).sort());
  });

  it('is what shopify.app.toml subscribes to: the webhook topics, and the compliance topics apart', () => {
    const toml = tomlTopics();
    expect(toml.topics.sort()).toEqual(byHandling('forwarded', 'lifecycle', 'side_effect'));
    expect(toml.compliance.sort()).toEqual(byHandling('privacy'));
  });

  it('says how each receipt is handled: storefront batches by their kind, unknown topics forwarded (and ignored there)', () => {
    expect(handlingOf('orders/create', 'webhook')).toBe('forwarded');
    expect(handlingOf('customers/redact', 'webhook')).toBe('privacy');
    expect(handlingOf('app/uninstalled', 'webhook')).toBe('lifecycle');
    expect(handlingOf('products/update', 'webhook')).toBe('side_effect');
    expect(handlingOf('pixel/events', 'pixel')).toBe('storefront');
    // a webhook never is a storefront batch, whatever its topic says
    expect(handlingOf('pixel/events', 'webhook')).toBe('forwarded');
    expect(handlingOf('themes/publish', 'webhook')).toBe('forwarded');
    expect(['customers/redact', 'customers/data_request', 'shop/redact', 'app/uninstalled'].every((t) => isSerial(t))).toBe(true);
    expect(isSerial('orders/create')).toBe(false);
  });
});
