// Shared by the mapping tests: fixtures read through the real parser, and inputs with defaults.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_SETTINGS, type Settings } from '../../../src/settings/settings';
import { parseWebhookBody, type MapInput } from '../../../src/mapping';

export const SHOP = 'northwind-outfitters.myshopify.com';
export const WEBHOOK_ID = 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043';
export const RECEIVED_AT = new Date('2026-11-04T19:32:10.000Z');
export const TOKEN = 'b8f2c3a1e5d94c7a9f0e1d2c3b4a5968';

/** A fixture as the intake sees it: parsed losslessly from the raw text. */
export function fixture(name: string): Record<string, unknown> {
  const raw = readFileSync(join(__dirname, '../../fixtures', `${name}.json`), 'utf8');
  return parseWebhookBody(raw) as Record<string, unknown>;
}

export function settingsWith(patch: {
  events?: Partial<Settings['events']>;
  contact_properties?: Partial<Settings['contact_properties']>;
  abandonment_delay_minutes?: number;
}): Settings {
  return {
    ...DEFAULT_SETTINGS,
    events: { ...DEFAULT_SETTINGS.events, ...patch.events },
    contact_properties: { ...DEFAULT_SETTINGS.contact_properties, ...patch.contact_properties },
    abandonment_delay_minutes: patch.abandonment_delay_minutes ?? DEFAULT_SETTINGS.abandonment_delay_minutes,
  };
}

export function input(topic: string, payload: unknown, over: Partial<MapInput> = {}): MapInput {
  return { topic, payload, webhookId: WEBHOOK_ID, shopDomain: SHOP, receivedAt: RECEIVED_AT, settings: DEFAULT_SETTINGS, ...over };
}
