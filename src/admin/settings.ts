import type { Db } from '../db/client';
import { DEFAULT_SETTINGS, mergeChoices, mergeSettings, readStoredChoices, type Settings, type SettingsPatch } from '../settings/settings';

/**
 * `defaults`: a shop's settings until its merchant changes them (Config.settingsDefaults). Only the
 * merchant's choices are stored, so a default the operator changes later still reaches every
 * setting the merchant left alone.
 */
export function createSettingsUseCases(db: Db, defaults: Settings = DEFAULT_SETTINGS) {
  async function choices(shopId: string): Promise<SettingsPatch> {
    const row = await db.shopSettings.findUnique({ where: { shopId } });
    return readStoredChoices(row?.data);
  }
  return {
    async get(shopId: string): Promise<Settings> {
      return mergeSettings(defaults, await choices(shopId));
    },
    async update(shopId: string, patch: SettingsPatch): Promise<Settings> {
      const next = mergeChoices(await choices(shopId), patch);
      const data = JSON.stringify(next);
      await db.shopSettings.upsert({ where: { shopId }, create: { shopId, data }, update: { data } });
      return mergeSettings(defaults, next);
    },
  };
}

export type SettingsUseCases = ReturnType<typeof createSettingsUseCases>;
