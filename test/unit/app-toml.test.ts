import fs from 'node:fs';
import path from 'node:path';
import { EVENT_TABLE } from '../../src/mapping';
import { DEFAULT_SCOPES } from '../../src/config';

const toml = fs.readFileSync(path.join(__dirname, '..', '..', 'shopify.app.toml'), 'utf8');

describe('shopify.app.toml', () => {
  it('subscribes every forwarded topic, app/uninstalled, and the three compliance topics, all at /webhooks', () => {
    for (const topic of [...Object.keys(EVENT_TABLE), 'app/uninstalled']) expect(toml).toContain(`"${topic}"`);
    expect(toml).toMatch(/compliance_topics = \["customers\/data_request", "customers\/redact", "shop\/redact"\]/);
    expect(toml.match(/uri = "\/webhooks"/g)).toHaveLength(2);
  });

  it('subscribes the shipping topics', () => {
    for (const topic of ['fulfillments/create', 'fulfillments/update', 'fulfillment_events/create']) expect(toml).toContain(`"${topic}"`);
  });

  it('declares the app proxy the notify-me block posts through, under the app URL, with write_app_proxy among the scopes', () => {
    const section = /^\[app_proxy\]\n((?:[a-z_]+ = .*\n)+)/m.exec(toml)?.[1] ?? '';
    const appUrl = /^application_url = "(.*)"$/m.exec(toml)?.[1];
    expect(section).toContain(`url = "${appUrl}/proxy"`);
    expect(section).toContain('prefix = "apps"');
    expect(section).toContain('subpath = "email-connector"');
    expect(DEFAULT_SCOPES.split(',')).toContain('write_app_proxy');
  });

  it('is embedded, on API version 2026-10, with the scopes the app defaults to', () => {
    expect(toml).toMatch(/^embedded = true$/m);
    expect(toml).toMatch(/^api_version = "2026-10"$/m);
    expect(toml).toContain(`scopes = "${DEFAULT_SCOPES}"`);
  });
});
